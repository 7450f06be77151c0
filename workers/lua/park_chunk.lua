-- Park one chunk of a job with a stopping rule until the prefix reaches it (sim/jobs/sequential.py).
--
-- KEYS: 1 meta, 2 counters, 3 done (bitmap), 4 chunks (bookkeeping), 5 active set, 6 request key
--       (or meta), 7 pending (hash: chunk index -> the chunk's result, JSON)
-- ARGV: 1 job id, 2 chunk index, 3 now (unix seconds, text), 4 TTL seconds, 5 the chunk's result
-- Returns {code, state}: -1 the job is not QUEUED/RUNNING (nothing changed), 0 the chunk was
-- parked or merged already (a duplicate: nothing changed), 1 parked. Its counters are merged
-- later, in game order, by advance_prefix.lua - or dropped if the job stops before it.
local meta, done, chunks, pending = KEYS[1], KEYS[3], KEYS[4], KEYS[7]
local c, now, ttl = ARGV[2], ARGV[3], ARGV[4]

local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {-1, state or ''} end
local total = tonumber(redis.call('HGET', meta, 'chunks_total'))
if tonumber(c) >= total then return redis.error_reply('chunk index ' .. c .. ' out of range') end
if redis.call('SETBIT', done, c, 1) == 1 then return {0, state} end

redis.call('HSET', pending, c, ARGV[5])
if state == 'QUEUED' then
  redis.call('HSET', meta, 'state', 'RUNNING', 'started_at', now)
  state = 'RUNNING'
end
forget_chunk(chunks, c)
redis.call('HINCRBY', meta, 'chunks_done', 1)
redis.call('HSET', meta, 'updated_at', now)
for _, key in ipairs({meta, KEYS[2], done, chunks, KEYS[6], pending}) do
  redis.call('EXPIRE', key, ttl)
end
return {1, state}
