// Every name, rule, status, time-to-live and environment variable that Java and
// Python must agree on, declared once. Generated for Java (module
// local-bus/contracts, package dev.sand.contracts, at build time) and Python
// (package sand_contracts, by local-bus/gen-python.sh into sdk-python/src, committed:
// decision 0036). Nothing else may spell
// these strings: the thin wrappers dev.sand.contracts.{Names,Keys,Topics,
// ResultDocument} and sand.{keys,contracts} build names from them, and
// local-bus/contracts/src/test/resources/contract-cases.json is checked by both languages.
//
// Templates: `{field}` is replaced, once, by a value that has passed the
// matching name rule (app, grain, host, frontend, execution) or, for data keys
// and join groups, by the caller's string as is. One prefix: `sand`.

namespace java dev.sand.contracts
namespace py sand_contracts

// -- name rules (full-match regular expressions, the same in both languages) --
// No name may contain ':' (the Redis key separator) or '.' (the Kafka topic
// separator), so every key and topic splits back unambiguously.
const string NAME_APP = "[a-z0-9][a-z0-9-]{0,62}"
const string NAME_GRAIN = "[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
const string NAME_WORKFLOW = "[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
const string NAME_HOST = "[A-Za-z0-9][A-Za-z0-9_-]{0,62}"
const string NAME_EXECUTION = "[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
const string NAME_TRIGGER = "[A-Za-z0-9][A-Za-z0-9_-]{0,63}"  // a trigger of an app (decision 0034)
const string NAME_DATA_REQUEST = "[A-Za-z0-9_-]{1,64}"  // a global-data request id (names its reply key)

// -- Redis keys of the local bus and the local data layer --
const string KEY_QUEUE = "sand:q:{app}:{grain}"          // list: a grain's events (LPUSH in, BRPOP out)
const string KEY_AGENT = "sand:agent:{host}"             // list: backups and results for the host agent
const string KEY_REPLY = "sand:reply:{frontend}"         // list: RESULT/ERROR events for one frontend's sync callers
const string KEY_RESULT = "sand:result:{execution}"      // string: the execution's result document (JSON)
const string KEY_INCARNATION = "sand:incarnation"        // string: the running host agent's incarnation id
const string KEY_TIMERS = "sand:timers"                  // sorted set: TIMER events, score = due epoch ms
const string KEY_APP = "sand:app:{app}"                  // string: a deployed app's metadata (JSON)
const string KEY_READY = "sand:ready:{app}:{grain}"      // string with TTL: a grain worker is taking events
const string KEY_BROKEN = "sand:broken:{app}:{grain}"    // string with TTL: why a grain worker's grain cannot be imported (its events fail)
const string KEY_JOIN = "sand:join:{app}:{group}"        // hash: a Parallel/Map/native-join group of the engine
const string KEY_DATA = "sand:data:{app}:{scope}:{key}"  // string: a context.data value (scope local; global lives in Cassandra)
// The global data layer (decision 0012): a grain has no route to Cassandra; it asks its host
// agent through its own app's keys, which the ACL keeps from every other app. The agent takes the
// app from the key it popped, never from the request.
const string KEY_GDATA_REQUESTS = "sand:gdata:{app}:requests"         // list: DataRequest (compact), LPUSH by instances, BRPOP by the agent
const string KEY_GDATA_REPLY = "sand:gdata:{app}:reply:{request}"     // list: the one DataReply (compact) to a request, TTL GDATA_REPLY_TTL_S
// hash: a grain's counters, written by its worker and instances (HINCRBY; decision 0019), read by
// the host agent on a scrape of its /metrics. Tenant-written: the agent parses it as untrusted input.
const string KEY_METRICS = "sand:metrics:{app}:{grain}"
// Its fields: counters (HINCRBY) and one gauge (HSET). Run latency buckets are not cumulative:
// "<METRIC_RUN_BUCKET><bound>" counts the runs of at most that many seconds and more than the
// bound before it ("+Inf" last); the agent sums them into a Prometheus histogram (their sum is
// the number of runs, ok or failed).
const string METRIC_TAKEN = "taken"                 // events an instance took
const string METRIC_RUN_US = "run_us"               // total duration of grain runs, microseconds
const string METRIC_RUN_BUCKET = "run_le:"          // + a bound of METRIC_RUN_BUCKETS_S, or "+Inf"
const string METRIC_FAILED = "failed:"              // + error label: failed runs and lost instances
const string METRIC_TIMEOUTS = "timeouts"           // grain runs stopped at their deadline (or killed then)
const string METRIC_LOST = "lost"                   // other instances that ended without finishing
const string METRIC_IN_FLIGHT = "in_flight"         // gauge: instances running a task now
const list<string> METRIC_RUN_BUCKETS_S = [
  "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "300"
]
// The error label of a failure (after METRIC_FAILED, and the agent's `error` label of ended
// executions): an error type that fully matches METRIC_ERROR_NAME is its own label; any other, or
// none, counts as METRIC_ERROR_OTHER. Grains name their own errors: an odd name must neither break
// the field's parsing nor make a label of its own. The worker applies the rule as it counts, the
// agent again as it reads (the hash is tenant input), and caps the labels per grain on its own.
const string METRIC_ERROR_NAME = "[A-Za-z0-9_.-]{1,64}"
const string METRIC_ERROR_OTHER = "Other"

// What an application's own Redis ACL user may read and write (nothing of
// another app matches) ...
const list<string> ACL_APP_OWNED = [
  "sand:q:{app}:*", "sand:ready:{app}:*", "sand:broken:{app}:*", "sand:join:{app}:*",
  "sand:data:{app}:*", "sand:gdata:{app}:*", "sand:metrics:{app}:*"
]
// ... and what it may only write (shared by all apps: never readable by one).
const list<string> ACL_APP_WRITE_ONLY = ["sand:agent:*", "sand:reply:*", "sand:result:*", "sand:timers"]
// ... and what it may only read (the platform's word about its own executions).
const list<string> ACL_APP_READ_ONLY = ["sand:aborted:{app}"]
// sorted set: the executions of an app stopped on request (member = execution id, score = epoch ms
// of the stop); grain workers kill instances serving them and drop their events. Entries older
// than ABORTED_KEEP_S are trimmed by the agent that adds one.
const string KEY_ABORTED = "sand:aborted:{app}"
const i32 ABORTED_KEEP_S = 86400
// The Redis ACL user of an application.
const string REDIS_APP_USER = "sand-app-{app}"

// -- Kafka topics and groups of the global bus --
// A grain's topic is its global bus (decision 0011): events delivered through it (flag
// QUEUED) and the flags of every event the grain takes anywhere (PROCESSING, then
// FINISHED/FAILED), key = execution id. The host agent that owns a partition tracks its
// flags, commits up to the first unfinished event and replays a dead host's work.
const string TOPIC_GRAIN = "sand.{app}.{grain}"
const string TOPIC_RESULTS = "sand.results"              // final RESULT/ERROR events; recorded in Cassandra by group sand-records
const string KAFKA_GROUP_HOSTS = "sand-hosts"            // consumer group of the host agents' global bus
// HISTORY events (per-state execution history, JSON list in the payload), key = execution id;
// recorded in Cassandra by group sand-records (decision 0018)
const string TOPIC_HISTORY = "sand.history"
// consumer group that records results and history in Cassandra, both topics in one consumer
// (decision 0030)
const string KAFKA_GROUP_RECORDS = "sand-records"
// Headers of an INVOKE event (decision 0018): the client-chosen execution name of an idempotent
// start; and for a redrive, the top-level state to start at, its input (JSON), the workflow
// variables it had then (JSON object, decision 0020), when that state is a Parallel or Map the
// outputs of its branches or items that succeeded before (JSON object, slot -> output: kept,
// not run again), the redrive's number and the original execution's start (epoch ms). The
// payload stays the execution's input.
const string HEADER_NAME = "sand-name"
// The trigger that started an execution (decision 0034), on its INVOKE event: compact JSON
// {"name", "kind": "schedule", "time"} or {"name", "kind": "topic", "topic", "partition",
// "offset"}; the worker copies it into the ExecutionStarted history event as `trigger`.
const string HEADER_TRIGGER = "sand-trigger"
const string HEADER_REDRIVE_STATE = "sand-redrive-state"
const string HEADER_REDRIVE_INPUT = "sand-redrive-input"
const string HEADER_REDRIVE_VARIABLES = "sand-redrive-variables"
const string HEADER_REDRIVE_KEPT = "sand-redrive-kept"
const string HEADER_REDRIVE_COUNT = "sand-redrive-count"
const string HEADER_STARTED_MS = "sand-started-ms"
// Kafka record header: the incarnation (one run of a host agent) whose host processes the event
const string HEADER_INCARNATION = "sand-incarnation"
// Event header on a frontend's PROCESSING copy for the agent queue: the frontend already put the
// backup on the global bus itself (it must be there before the invocation is accepted)
const string HEADER_BACKED_UP = "sand-backed-up"
// Event header on the PROCESSING copy of an event the host agent took from the global bus: the
// event is already there (QUEUED or an earlier attempt), so its FINISHED flag must be sent
const string HEADER_REDELIVERED = "sand-redelivered"
// Event header on a grain instance's FINISHED copy: how many records for the agent queue the
// instance pushed just before it, in the same push (its products; the flag waits for them only)
const string HEADER_PRODUCED = "sand-produced"

// Kafka record header on an event's FINISHED flag: the global data the instance wrote, a JSON list of
// {"key": k, "size": bytes, "sha256": hex} (a put) or {"key": k, "deleted": true} (a delete), the
// last operation per key. Recovery compares it with Cassandra (SAND paper §4, data layers).
const string HEADER_DATA = "sand-data"
// Event header of a traced execution (decision 0019): a W3C traceparent
// "00-<trace id>-<parent span id>-<flags>" whose parent is the span of the grain run (or the
// caller's span, on the INVOKE event) that produced the event. Each grain run is a span.
const string HEADER_TRACEPARENT = "sand-traceparent"
// Event headers of a traced execution (`?trace=1` or a traceparent, decision 0019), set by the
// frontend on the INVOKE event and passed on by each grain instance with the events it produces:
// the spans so far, a JSON list of frontend/openapi.yaml's TraceSpan (one per event handled on the
// execution's path); and when the frontend took the invocation, epoch seconds with microseconds
// ("1700000000.123456"). The final result document carries them as `trace` (ExecutionTrace).
const string HEADER_TRACE = "trace"
const string HEADER_FRONTEND_IN = "t_frontend_in"

// -- callbacks: a Task whose Resource ends in .waitForTaskToken (decision 0033) --
// Event header on the TIMER a worker parks once the task's grain ran: JSON
// {"token": the task token, "timeout_at": epoch ms, "heartbeat_ms": 0 or the HeartbeatSeconds in ms}.
// The host agent that takes it from sand:timers registers (or re-registers) the wait in Cassandra
// and fires it only with an outcome: a callback's, or a timeout's.
const string HEADER_CALLBACK = "sand-callback"
// Event header on such a TIMER once fired: JSON {"output": <value>} or {"error": e, "cause": c}
const string HEADER_CALLBACK_OUTCOME = "sand-callback-outcome"
// What the task-token key of one app derives from (HMAC-SHA256 keyed with host_agent.secret over
// this prefix and the app's name); a task token is "<b64url(app \n execution \n wait)>.<b64url(HMAC
// of those bytes under the app's key)>"
const string TASK_TOKEN_KEY_LABEL = "sand-task-token\n"
const string TASK_WAIT_WAITING = "WAITING"
const string TASK_WAIT_SUCCEEDED = "SUCCEEDED"
const string TASK_WAIT_FAILED = "FAILED"
const string TASK_WAIT_TIMED_OUT = "TIMED_OUT"

// -- the global data layer (Cassandra, through the host agent) --
const i32 DATA_MAX_KEY_BYTES = 1024        // a context.data key, UTF-8, either scope
const i32 GDATA_MAX_VALUE_BYTES = 1048576  // a stored (encoded) value, refused beyond: by the SDK and by the agent
const i32 GDATA_TIMEOUT_MS = 10000         // how long an instance waits for the agent's reply
const i32 GDATA_REPLY_TTL_S = 60           // a reply nobody took (its grain gave up) expires

// -- bounds of the cluster's configuration: `sand` checks them when it reads the config (the
// `[section] key` named), the Java services again when they read cluster.json --
const i32 CONFIG_MAX_QUEUED = 1000000        // admission.max_queued_per_app and _per_host
const i32 CONFIG_MAX_RETRY_AFTER_S = 3600    // admission.retry_after_s
const i32 CONFIG_MAX_RETENTION_DAYS = 3650   // executions.retention_days
const i32 CONFIG_MIN_CPU_WEIGHT = 1          // sandbox.cpu_weight, max_cpu_weight and an app's
const i32 CONFIG_MAX_CPU_WEIGHT = 10000      //   cpu_weight: cgroup v2's cpu.weight range
const i32 CONFIG_MAX_PAYLOAD_KB = 10240      // frontend.max_payload_kb
const i32 CONFIG_MAX_HOSTS = 8               // cluster.hosts; also the most replicas of a row
                                             //   (cassandra.replication_factor in cluster.json)

// -- identity (decision 0017): users, bearer tokens, the frontends' word to the host agents --
const string NAME_USER = "[a-z][a-z0-9-]{0,31}"          // a user name
const string TOKEN_PREFIX = "sand_"                      // a token: this, then 43 base64url characters (256 random bits)
const string ROLE_ADMIN = "admin"                        // manages users and tokens, sees every app
const string ROLE_USER = "user"                          // sees, deploys and invokes its own apps
const string FILE_INTERNAL_SECRET = "conf/internal.secret" // under the state dir, 0600: the agents' shared secret
const string FILE_ADMIN_TOKEN = "conf/admin.token"       // under the state dir, 0600: the first admin's token
// A host agent answers only requests that carry its secret (every path but /health); a
// frontend says on whose behalf it forwards. A request with the secret and no user is the
// system's own (bootstrap, the cluster's tools): admin.
const string HEADER_INTERNAL = "X-Sand-Internal"
const string HEADER_USER = "X-Sand-User"
const string HEADER_ROLE = "X-Sand-Role"
const string HEADER_TOKEN_ID = "X-Sand-Token-Id"
const string HEADER_TOKEN_HASH = "X-Sand-Token-Hash"     // lowercase hex SHA-256 of a token, to look it up

// -- sandboxes (containers) --
const string LABEL_OWNER = "dev.sand.owner"  // host id of the agent that created it; orphans are removed at start-up
const string LABEL_APP = "dev.sand.app"      // the application it isolates
const string SANDBOX_NAME = "sand-{host}-{app}"
// The cgroup, at the root of each cgroup hierarchy (v1: cpu and memory; v2: the unified
// one), that holds every process sandbox of one host (decision 0022): {hash} is the first
// 16 lowercase hex digits of the SHA-256 of the host's state dir (its absolute path, UTF-8).
// An agent that starts kills what a previous run left in it; `sand down` does too.
const string CGROUP_PARENT = "sand-{hash}"

// -- time-to-live of Redis keys, seconds --
const i32 RESULT_TTL_S = 3600   // a result document (sand:result:*)
const i32 READY_TTL_S = 10      // a grain worker's readiness key, refreshed every third of it
const i32 GROUP_TTL_S = 86400   // a workflow engine group (sand:join:*)

// -- the environment of a grain worker, set by the host agent --
const string ENV_APP = "SAND_APP"                        // application name
const string ENV_APP_DIR = "SAND_APP_DIR"                // the app's code, as seen by the worker
const string ENV_HOST_ID = "SAND_HOST_ID"                // host whose agent queue gets backups
const string ENV_REDIS_SOCKET = "SAND_REDIS_SOCKET"      // the local bus's unix socket
const string ENV_REDIS_USER = "SAND_REDIS_USER"          // the app's ACL user
const string ENV_REDIS_PASSWORD = "SAND_REDIS_PASSWORD"  // its password
const string ENV_PREFORK = "SAND_PREFORK"                // children forked ahead of events, per grain
const string ENV_MAX_CONCURRENCY = "SAND_MAX_CONCURRENCY" // instances in flight, per grain
const string ENV_GRACE_S = "SAND_GRACE_S"                // seconds between a deadline and SIGKILL
const string ENV_BACKUP = "SAND_BACKUP"                  // "1": back events up through the agent; "0": off
const string ENV_REMOTE_GRAINS = "SAND_REMOTE_GRAINS"    // comma-separated grains reached through Kafka
const string ENV_LOCAL_GRAINS = "SAND_LOCAL_GRAINS"      // comma-separated grains this sandbox runs; unset: all
const string ENV_AGENT_FD = "SAND_AGENT_FD"              // a file descriptor that reaches end-of-file when the host agent is gone (decision 0021); unset: none
const string ENV_TASK_TOKEN_KEY = "SAND_TASK_TOKEN_KEY"  // hex: the app's key for task tokens (callbacks, decision 0033)

// Where an execution is. Stored by name ("SUCCEEDED") in the result document
// and in Cassandra. Starts at 1 so that an unset field never reads as RUNNING.
enum ExecutionStatus {
  RUNNING = 1,    // accepted, not finished
  SUCCEEDED = 2,  // ended with an output
  FAILED = 3,     // ended with an error and a cause
  ABORTED = 4,    // stopped on request (POST /v1/executions/{id}/stop); error/cause say by whom and why
}

// The result document of an execution: JSON at sand:result:<execution>, the
// payload of RESULT/ERROR events, and the body of GET /v1/executions/{id}.
// JSON keys are these field names; unset fields are absent.
struct ExecutionResult {
  1: string execution_id,
  2: string app,
  3: string workflow,
  4: ExecutionStatus status,   // by name
  5: optional i64 started_ms,  // epoch ms, set while RUNNING
  6: optional i64 finished_ms, // epoch ms, set once SUCCEEDED or FAILED
  7: optional string output,   // SUCCEEDED: the output, a JSON value embedded as is
  8: optional string error,    // FAILED: the error name (ASL "Error")
  9: optional string cause,    // FAILED: why (ASL "Cause")
  10: optional string trace,   // when the invocation asked for it: per-grain spans, a JSON value embedded as is
  11: optional string input,   // the execution's input, a JSON value embedded as is (from its record)
  12: optional string name,    // the client-chosen execution name of an idempotent start
  13: optional i32 redrive_count, // how many times it was redriven (absent: never)
  14: optional string trigger,  // the trigger that started it (decision 0034), a JSON object embedded as is
}

// What a grain asks of the global data layer.
enum DataOp {
  GET = 1,
  PUT = 2,
  DELETE = 3,
  KEYS = 4,
}

// A request of a grain instance to its host agent, LPUSHed to KEY_GDATA_REQUESTS of its app.
// No app field: the agent knows the app from the key, which only that app may write.
struct DataRequest {
  1: string request_id,      // NAME_DATA_REQUEST; the reply goes to KEY_GDATA_REPLY
  2: DataOp op,
  3: string key,             // GET/PUT/DELETE: the key; KEYS: the prefix ("" = all)
  4: optional binary value,  // PUT: the encoded value, at most GDATA_MAX_VALUE_BYTES
  5: i64 deadline_ms,        // epoch ms; the grain stops waiting then, and the agent drops it unanswered
}

// The agent's answer to one DataRequest.
struct DataReply {
  1: bool ok,
  2: optional binary value,       // GET: the value; unset when the key is absent
  3: optional bool existed,       // DELETE: whether the key was there
  4: optional list<string> keys,  // KEYS: the matching keys, sorted
  5: optional string error,       // not ok: why, for the grain (names the operation and the cause)
}
