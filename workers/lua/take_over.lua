-- Take a chunk's message back from a worker that is gone: it was delivered (kombu's unacked
-- hash) longer ago than a lease plus the grace, and no attempt holds a live lease on the chunk,
-- so no live process is playing it. The unacked entries are removed here, atomically, so
-- kombu's own restore (which WATCHes the hash) cannot put a second copy back; the caller then
-- publishes the chunk once.
--
-- KEYS: 1 meta, 2 done, 3 chunks, 4 kombu's unacked hash, 5 kombu's unacked index (sorted set),
--       6 the service-wide count of republished chunks
-- ARGV: 1 now, 2 TTL seconds, 3 chunk index, 4.. delivery tags of the chunk's unacked entries
-- Returns 1 (publish the chunk) or 0 (leave it: merged, leased, job over, or entries gone).
local meta, done, chunks, now, c = KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), ARGV[3]
local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return 0 end
if redis.call('GETBIT', done, c) == 1 then return 0 end
if tonumber(redis.call('HGET', chunks, 'l:' .. c) or '0') > now then return 0 end
local removed = 0
for i = 4, #ARGV do
  removed = removed + redis.call('HDEL', KEYS[4], ARGV[i])
  redis.call('ZREM', KEYS[5], ARGV[i])
end
if removed == 0 then return 0 end
redis.call('HINCRBY', chunks, 'p:' .. c, 1)
redis.call('HSET', chunks, 'q:' .. c, ARGV[1])
redis.call('HDEL', chunks, 'm:' .. c)
redis.call('EXPIRE', chunks, ARGV[2])
redis.call('INCRBY', KEYS[6], 1)
return 1
