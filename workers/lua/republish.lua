-- The reconciler is about to publish chunks again: keep those still wanted, count the publish.
--
-- KEYS: 1 meta, 2 done, 3 chunks, 4 the service-wide count of republished chunks
-- ARGV: 1 now, 2 TTL seconds, then (chunk index, starts the decision saw) pairs
-- A chunk is kept when the job is QUEUED/RUNNING, the chunk is not merged, no attempt holds a
-- live lease on it and no attempt started since the reconciler looked (its start count is the
-- same): the message it judged lost may have just been taken by a worker.
-- Returns the chunk indices to publish.
local meta, done, chunks, now = KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1])
local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {} end
local out = {}
for i = 3, #ARGV, 2 do
  local c, seen = ARGV[i], ARGV[i + 1]
  local lease = tonumber(redis.call('HGET', chunks, 'l:' .. c) or '0')
  local starts = redis.call('HGET', chunks, 's:' .. c) or '0'
  if redis.call('GETBIT', done, c) == 0 and lease <= now and starts == seen then
    redis.call('HINCRBY', chunks, 'p:' .. c, 1)
    redis.call('HSET', chunks, 'q:' .. c, ARGV[1])
    redis.call('HDEL', chunks, 'm:' .. c)
    out[#out + 1] = c
  end
end
if #out > 0 then
  redis.call('EXPIRE', chunks, ARGV[2])
  redis.call('INCRBY', KEYS[4], #out)
end
return out
