# Every section of the cell module set at once. CI renders the module with
# these values and runs `celld --check-config` on the result
# (deploy/terraform/check.sh); the plan tests cover the same settings.
name      = "cell-full"
namespace = "router"
cell_id   = "us-east1.cell-7"
image     = "registry.example.com/cellrouter:v1.2.0"
pods = [
  {
    id                 = "vllm-0"
    address            = "10.0.3.4:8000"
    model              = "llama-3.1-8b"
    zmq_endpoint       = "tcp://10.0.3.4:5557"
    replay_endpoint    = "tcp://10.0.3.4:5558"
    kv_blocks          = 16384
    data_parallel_size = 2
  },
  { id = "vllm-prefill-0", address = "10.0.3.5:8000", role = "prefill", model = "llama-3.1-8b", kv_blocks = 16384 },
  { id = "vllm-decode-0", address = "10.0.3.6:8000", role = "decode", model = "llama-3.1-8b", replay_endpoint = "tcp://10.0.3.6:5558" },
]
demo_engines = { count = 2, model = "enginesim", blocks = 2048, time_scale = 0 }
events = {
  block_size         = 16
  default_model      = "llama-3.1-8b"
  models             = ["llama-3.1-8b", "enginesim"]
  max_blocks_per_pod = 262144
  dead_after         = "45s"
}
snapshot = { interval = "5m", every_events = 100000, keep = 2, size_limit = "1Gi" }
index    = { max_blocks = 8388608, sweep_workers = 2, expected_blocks = -1 }
zmq      = { bind_port = 5557, topic_prefix = "kv@", queue_depth = 2048, replay_timeout = "3s" }
nats = {
  url             = "nats://nats.nats.svc:4222"
  stream          = "KV_EVENTS"
  subject_prefix  = "kv.events"
  create_stream   = true
  replay          = true
  stream_max_age  = "24h"
  ack_wait        = "30s"
  max_ack_pending = 1
}
routing = {
  profile                 = "sessions"
  kv_overlap_score_weight = 1.5
  router_temperature      = 0.1
  busy_threshold          = 0.9
  session_header          = "X-Session-Id"
  session_ttl             = "15m"
  connect_timeout         = "1s"
  response_header_timeout = "2m"
  request_timeout         = "5m"
  max_attempts            = 2
  max_body_bytes          = 16777216
  tokenize_timeout        = "3s"
  candidates_ttl          = "50ms"
  profiles_yaml           = <<-YAML
    - name: sessions
      prepare: [tokens, block-hashes, prefix-match, {type: session, params: {header: X-Session-Id}}]
      filter: [healthy, role, {type: concurrency, params: {max_requests: 64}}]
      score:
        - {type: cache-affinity, weight: 2}
        - {type: least-load, weight: 1}
        - {type: session-affinity, weight: 1}
      pick: max-score
  YAML
}
timings = { tick_interval = "1s", health_interval = "5s", health_timeout = "2s", shutdown_timeout = "10s" }
gossip = {
  seeds               = ["globald-gossip.router.svc.cluster.local:7946"]
  summary_interval    = "2s"
  stride              = 4
  false_positive_rate = 0.01
  probe_interval      = "1s"
  probe_timeout       = "500ms"
}
