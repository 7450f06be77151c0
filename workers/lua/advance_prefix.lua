-- Move the contiguous prefix of a job with a stopping rule over its next chunk, atomically.
--
-- The caller read the prefix position p and chunk p's parked result, read the rule at the check
-- points in it (a pure function of the prefix, so every worker computes the same) and passes what
-- to merge: chunk p's counters, or, when the rule stopped inside chunk p, those of its games up
-- to the stop. The position is compared and set here, so of two workers doing this at once one
-- merges and the other is told it is stale; nothing is merged twice and no chunk is skipped.
--
-- KEYS: 1 meta, 2 counters, 3 done, 4 chunks, 5 active set, 6 request key (or meta), 7 pending
-- ARGV: 1 job id, 2 p (the chunk index the caller read as the prefix position), 3 now, 4 TTL,
--       5 the prefix state after chunk p (JSON), 6 games done after it (all configurations),
--       7 stop reason ('' while undecided), 8 n = number of additive pairs, then n (field,
--       increment) pairs, then ('min|'/'max|' field, value) pairs.
-- Returns {code, state}: -1 the job is not QUEUED/RUNNING, 0 stale (the prefix is not at p, or
-- chunk p is not parked: nothing changed), 1 advanced, 2 advanced and the job is now SUCCEEDED.
local meta, counters, done, chunks, active, pending = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7]
local job_id, p, now, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {-1, state or ''} end
local at = redis.call('HGET', meta, 'prefix') or '0'
if at ~= p or redis.call('HEXISTS', pending, p) == 0 then return {0, state} end

merge_counters(counters, 8)

redis.call('HDEL', pending, p)
redis.call('HSET', meta, 'prefix', tonumber(p) + 1, 'stopping', ARGV[5], 'games_done', ARGV[6],
  'updated_at', now)
local keys = {meta, counters, done, chunks, KEYS[6], pending}
if ARGV[7] ~= '' then
  -- Decided (or the last chunk): what is parked past the stop is dropped, never merged.
  redis.call('HSET', meta, 'stop_reason', ARGV[7])
  redis.call('DEL', pending, chunks)
  finish(meta, keys, active, job_id, 'SUCCEEDED', now, ttl, '')
  return {2, 'SUCCEEDED'}
end
for _, key in ipairs(keys) do redis.call('EXPIRE', key, ttl) end
return {1, state}
