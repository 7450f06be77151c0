-- The reconciler is about to publish chunks again: keep those still wanted, count the publish.
--
-- KEYS: 1 meta, 2 done, 3 chunks
-- ARGV: 1 now, 2 TTL seconds, 3.. chunk indices
-- Returns the chunk indices to publish (the job is QUEUED/RUNNING and the chunk is not merged).
local meta, done, chunks, now = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {} end
local out = {}
for i = 3, #ARGV do
  local c = ARGV[i]
  if redis.call('GETBIT', done, c) == 0 then
    redis.call('HINCRBY', chunks, 'p:' .. c, 1)
    redis.call('HSET', chunks, 'q:' .. c, now)
    out[#out + 1] = c
  end
end
if #out > 0 then redis.call('EXPIRE', chunks, ARGV[2]) end
return out
