-- Claim the next chunks of a job to publish: those that fit in its window (workers/dispatch.py).
--
-- A job's chunks are published lazily: at most `window` ahead of its merged ones. The window's
-- base is the merged prefix for a job with a stopping rule (field ordered = 1: chunks merge in
-- game order), the count of merged chunks otherwise. `next` is the first chunk never claimed;
-- a job without it (created before windows) had every chunk published at submit.
--
-- KEYS: 1 meta, 2 chunks (bookkeeping)
-- ARGV: 1 window, 2 now, 3 TTL seconds
-- Returns {from, to}: publish chunks from .. to - 1 (none when from == to). Each gets its publish
-- time (q:<chunk>), which the reconciler reads: a chunk is not looked at for a grace after it.
local meta, chunks = KEYS[1], KEYS[2]
local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {0, 0} end
local nxt = redis.call('HGET', meta, 'next')
if not nxt then return {0, 0} end
nxt = tonumber(nxt)
local total = tonumber(redis.call('HGET', meta, 'chunks_total'))
local base
if redis.call('HGET', meta, 'ordered') == '1' then
  base = tonumber(redis.call('HGET', meta, 'prefix') or '0')
else
  base = tonumber(redis.call('HGET', meta, 'chunks_done') or '0')
end
local upto = math.min(total, base + tonumber(ARGV[1]))
if upto <= nxt then return {nxt, nxt} end
for c = nxt, upto - 1 do redis.call('HSET', chunks, 'q:' .. c, ARGV[2]) end
redis.call('HSET', meta, 'next', upto)
redis.call('EXPIRE', chunks, ARGV[3])
return {nxt, upto}
