-- Renew the lease of a chunk attempt that is still playing (its worker calls this every third of
-- the lease). Nothing is written for a job that ended or a chunk merged meanwhile: the chunks hash
-- of a finished job is gone, and must not come back without its TTL.
--
-- KEYS: 1 meta, 2 done, 3 chunks
-- ARGV: 1 chunk index, 2 new deadline (unix seconds)
-- Returns 1 renewed, 0 not (the job is not QUEUED/RUNNING or the chunk is merged).
local state = redis.call('HGET', KEYS[1], 'state')
if not state or not ACTIVE[state] then return 0 end
if redis.call('GETBIT', KEYS[2], ARGV[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
redis.call('HSET', KEYS[3], 'l:' .. ARGV[1], ARGV[2])
return 1
