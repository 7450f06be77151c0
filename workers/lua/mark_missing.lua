-- The reconciler found chunks in no queue, in no unacked entry and under no live lease: mark
-- each (m:<chunk> = "<starts>:<republishes>:<now>"). A later sweep publishes it only if it is
-- still missing and the mark still matches (nothing started or was published meanwhile); one
-- look could catch a message in flight between the queue and kombu's unacked hash.
--
-- KEYS: 1 meta, 2 done, 3 chunks
-- ARGV: 1 TTL seconds, then (chunk index, mark) pairs; an empty mark deletes the chunk's mark
-- (found in the queue after all)
-- Returns how many marks were written or deleted.
local state = redis.call('HGET', KEYS[1], 'state')
if not state or not ACTIVE[state] then return 0 end
local n = 0
for i = 2, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    n = n + redis.call('HDEL', KEYS[3], 'm:' .. ARGV[i])
  elseif redis.call('GETBIT', KEYS[2], ARGV[i]) == 0 then
    redis.call('HSET', KEYS[3], 'm:' .. ARGV[i], ARGV[i + 1])
    n = n + 1
  end
end
if n > 0 then redis.call('EXPIRE', KEYS[3], ARGV[1]) end
return n
