-- Cancel a job: QUEUED/RUNNING -> CANCELLED (counters freeze: the merge script refuses it now).
--
-- KEYS: 1 meta, 2 counters, 3 done, 4 chunks, 5 active-jobs set, 6 request-id key (or meta)
-- ARGV: 1 job id, 2 now, 3 TTL seconds
-- Returns {'cancelled', 'CANCELLED'}, {'finished', state} or {'missing', ''}.
local meta = KEYS[1]
local state = redis.call('HGET', meta, 'state')
if not state then return {'missing', ''} end
if not ACTIVE[state] then return {'finished', state} end
redis.call('DEL', KEYS[4])
finish(meta, {meta, KEYS[2], KEYS[3], KEYS[4], KEYS[6]}, KEYS[5], ARGV[1], 'CANCELLED', ARGV[2],
       ARGV[3], '')
return {'cancelled', 'CANCELLED'}
