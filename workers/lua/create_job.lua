-- Create a job, idempotently by request id.
--
-- KEYS: 1 meta of the new job, 2 the request-id key (or the meta key again when there is none),
--       3 jobs index (sorted set, score = sequence number), 4 active-jobs set, 5 sequence counter
-- ARGV: 1 new job id, 2 spec JSON (canonical), 3 TTL seconds, 4 key prefix of a job's meta
--       (meta key = prefix .. job id .. '}'), 5.. field, value pairs of the new meta hash
-- Returns {'created', job id}, {'exists', job id} (same request id, same spec) or
--         {'conflict', job id} (same request id, another spec).
local meta, req = KEYS[1], KEYS[2]
local job_id, spec, ttl = ARGV[1], ARGV[2], ARGV[3]
if req ~= meta then
  local existing = redis.call('GET', req)
  if existing then
    local other = ARGV[4] .. existing .. '}'
    local other_spec = redis.call('HGET', other, 'spec')
    if other_spec then
      if other_spec == spec then return {'exists', existing} end
      return {'conflict', existing}
    end
  end
end
local seq = redis.call('INCR', KEYS[5])
local fields = {'spec', spec, 'seq', seq}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', meta, unpack(fields))
redis.call('EXPIRE', meta, ttl)
redis.call('ZADD', KEYS[3], seq, job_id)
redis.call('SADD', KEYS[4], job_id)
if req ~= meta then redis.call('SET', req, job_id, 'EX', ttl) end
return {'created', job_id}
