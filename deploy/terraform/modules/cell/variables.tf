# Identity and image.

variable "name" {
  description = "Name of the cell's Kubernetes objects: the celld Deployment and its Service, and the prefix of the others (<name>-gossip, <name>-config, <name>-engine). A DNS label of at most 40 characters, so that the suffixes fit."
  type        = string
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$", var.name))
    error_message = "name must be a DNS label of 1 to 40 characters: lower-case letters, digits and '-', starting with a letter and not ending with '-'."
  }
}

variable "namespace" {
  description = "Namespace the cell is deployed in (it must exist)."
  type        = string
  default     = "default"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS label (lower-case letters, digits and '-', at most 63 characters)."
  }
}

variable "cell_id" {
  description = "The cell's id in metrics, traces, the state API and the gossip pool (celld cell_id); unique in the pool. Default: name."
  type        = string
  default     = null
  validation {
    condition     = var.cell_id == null || can(regex("^[^\\s@/]{1,64}$", var.cell_id))
    error_message = "cell_id must be 1 to 64 characters without spaces, '@' or '/' (the gossip wire format carries at most 64)."
  }
}

variable "image" {
  description = "The cellrouter image (deploy/image/build.sh), e.g. registry.example.com/cellrouter:v1.2.0. The demo engines run from it too."
  type        = string
  validation {
    condition     = can(regex("^[^\\s]+$", var.image))
    error_message = "image must be a non-empty image reference without spaces."
  }
}

variable "image_pull_policy" {
  description = "Pull policy of the celld and demo engine containers."
  type        = string
  default     = "IfNotPresent"
  validation {
    condition     = contains(["Always", "IfNotPresent", "Never"], var.image_pull_policy)
    error_message = "image_pull_policy must be Always, IfNotPresent or Never."
  }
}

variable "replicas" {
  description = "celld replicas of the cell (no single point of failure): each consumes every event (it dials every pod's ZMQ socket, or has its own NATS durable consumer celld-<cell_id>-<pod name>), they share their load and drains over gossip, and the global tier sees one endpoint per replica (gossip node cell/<cell_id>/<pod name>). Replicas need pods the cell dials (no zmq.bind_port: an engine connects to one replica only), a derived NATS durable (no nats.durable) and their own advertised addresses (no gossip.advertise_address). Add capacity by adding cells. 0 scales the cell down."
  type        = number
  default     = 1
  validation {
    condition     = var.replicas >= 0 && var.replicas <= 16 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number from 0 to 16."
  }
  validation {
    condition     = var.replicas <= 1 || (var.zmq.bind_port == null && try(var.nats.durable, null) == null && try(var.gossip.advertise_address, null) == null)
    error_message = "replicas above 1 need pods the cell dials (no zmq.bind_port: an engine connecting to the cell would feed one replica), the per-replica NATS durable celld derives (no nats.durable: a shared durable splits the events) and each replica's own pod IP advertised (no gossip.advertise_address)."
  }
}

variable "labels" {
  description = "Extra labels on every object the module creates and on the pods."
  type        = map(string)
  default     = {}
}

variable "cluster_domain" {
  description = "The cluster's DNS domain, for the endpoints the module reports and the demo engines' addresses."
  type        = string
  default     = "cluster.local"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.cluster_domain))
    error_message = "cluster_domain must be a DNS name such as cluster.local."
  }
}

# What the cell indexes: pods and event sources.

variable "pods" {
  description = <<-EOT
    Engine pods the cell routes to (celld pods[]), at most 256 with the demo engines. Each: id, address (host:port of its
    OpenAI API and GET /health), role (both, prefill, decode), model (the name clients send, vLLM --served-model-name),
    zmq_endpoint and replay_endpoint (the engine's KV-event PUB and replay sockets, tcp://host:port, which the cell dials),
    kv_blocks (its KV cache in router blocks, for the busy threshold) and data_parallel_size (vLLM's; rank r on the ports
    plus r). Pods that are not listed are discovered from their events (zmq.bind_port, nats).
  EOT
  type = list(object({
    id                 = string
    address            = string
    role               = optional(string, "both")
    model              = optional(string)
    zmq_endpoint       = optional(string)
    replay_endpoint    = optional(string)
    kv_blocks          = optional(number)
    data_parallel_size = optional(number)
  }))
  default = []
  validation {
    condition     = alltrue([for p in var.pods : can(regex("^[^\\s@]{1,128}$", p.id))])
    error_message = "pods[].id must be 1 to 128 characters without spaces or '@'."
  }
  validation {
    condition     = length(distinct([for p in var.pods : p.id])) == length(var.pods)
    error_message = "pods[].id must be unique."
  }
  validation {
    condition     = alltrue([for p in var.pods : can(regex("^[^\\s:/]+:[0-9]{1,5}$", p.address)) || can(regex("^\\[[0-9a-fA-F:.]+\\]:[0-9]{1,5}$", p.address))])
    error_message = "pods[].address must be host:port (an IPv6 host in brackets), without a scheme."
  }
  validation {
    condition     = alltrue([for p in var.pods : contains(["both", "prefill", "decode"], p.role)])
    error_message = "pods[].role must be both, prefill or decode."
  }
  validation {
    condition = alltrue([for p in var.pods : alltrue([
      for e in [p.zmq_endpoint, p.replay_endpoint] : e == null || can(regex("^tcp://[^\\s/]+:[0-9]{1,5}$", e))
    ])])
    error_message = "pods[].zmq_endpoint and replay_endpoint must be tcp://host:port."
  }
  validation {
    condition     = alltrue([for p in var.pods : p.kv_blocks == null || (try(p.kv_blocks >= 0 && floor(p.kv_blocks) == p.kv_blocks, false))])
    error_message = "pods[].kv_blocks must be a whole number, 0 or more."
  }
  validation {
    condition = alltrue([for p in var.pods : p.data_parallel_size == null || try(
      p.data_parallel_size >= 0 && p.data_parallel_size <= 1024 && floor(p.data_parallel_size) == p.data_parallel_size
    && (p.data_parallel_size <= 1 || p.zmq_endpoint != null), false)])
    error_message = "pods[].data_parallel_size must be a whole number from 0 to 1024, and above 1 it needs a zmq_endpoint (rank r publishes on its port plus r)."
  }
  validation {
    condition     = alltrue([for p in var.pods : p.replay_endpoint == null || p.zmq_endpoint != null || var.zmq.bind_port != null])
    error_message = "pods[].replay_endpoint needs the pod's zmq_endpoint, or zmq.bind_port for engines that connect to the cell."
  }
  validation {
    condition     = length(var.pods) + (var.demo_engines == null ? 0 : var.demo_engines.count) <= 256
    error_message = "A cell holds at most 256 pods (pods plus demo_engines.count)."
  }
}

variable "events" {
  description = "Event translation (celld events): block_size (the router's block in tokens), default_model (of events nothing else names), models (allow-list), max_blocks_per_pod, dead_after (how long a silent pod stays indexed). Unset fields keep celld's defaults."
  type = object({
    block_size         = optional(number)
    default_model      = optional(string)
    models             = optional(list(string))
    max_blocks_per_pod = optional(number)
    dead_after         = optional(string)
  })
  default  = {}
  nullable = false
  validation {
    condition     = var.events.block_size == null || try(contains([1, 2, 4, 8, 16, 32, 64, 128, 256, 512], var.events.block_size), false)
    error_message = "events.block_size must be a power of two from 1 to 512 (it must divide 512)."
  }
  validation {
    condition     = var.events.max_blocks_per_pod == null || try(var.events.max_blocks_per_pod >= 1 && floor(var.events.max_blocks_per_pod) == var.events.max_blocks_per_pod, false)
    error_message = "events.max_blocks_per_pod must be a whole number, at least 1."
  }
  validation {
    condition     = var.events.dead_after == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", var.events.dead_after))
    error_message = "events.dead_after must be a Go duration such as 30s or 1m30s."
  }
}

variable "index" {
  description = "The block index (celld index): max_blocks (distinct blocks held; about 30 bytes each, size the memory limit for it), sweep_workers, expected_blocks (pre-sizing: 0 the pods' kv_blocks, -1 none). Unset fields keep celld's defaults."
  type = object({
    max_blocks      = optional(number)
    sweep_workers   = optional(number)
    expected_blocks = optional(number)
  })
  default  = {}
  nullable = false
  validation {
    condition     = var.index.max_blocks == null || try(var.index.max_blocks >= 1 && floor(var.index.max_blocks) == var.index.max_blocks, false)
    error_message = "index.max_blocks must be a whole number, at least 1."
  }
  validation {
    condition     = var.index.sweep_workers == null || try(var.index.sweep_workers >= 1 && floor(var.index.sweep_workers) == var.index.sweep_workers, false)
    error_message = "index.sweep_workers must be a whole number, at least 1."
  }
  validation {
    condition     = var.index.expected_blocks == null || try(var.index.expected_blocks >= -1 && floor(var.index.expected_blocks) == var.index.expected_blocks, false)
    error_message = "index.expected_blocks must be -1 (none), 0 (the pods' kv_blocks) or a positive whole number."
  }
}

variable "zmq" {
  description = "The vLLM/SGLang ZMQ transport (celld zmq). bind_port makes the cell bind a SUB socket on every interface that engines connect to (exposed on the cell's Service as port \"zmq\"); each engine then names itself in its topic, <topic_prefix><pod address or id>[@<model>]. queue_depth bounds the messages waiting per connected engine; replay_timeout bounds one gap repair."
  type = object({
    bind_port      = optional(number)
    topic_prefix   = optional(string)
    queue_depth    = optional(number)
    replay_timeout = optional(string)
  })
  default  = {}
  nullable = false
  validation {
    condition     = var.zmq.bind_port == null || try(var.zmq.bind_port >= 1 && var.zmq.bind_port <= 65535 && floor(var.zmq.bind_port) == var.zmq.bind_port, false)
    error_message = "zmq.bind_port must be a port number from 1 to 65535."
  }
  validation {
    condition     = var.zmq.topic_prefix == null || can(regex("^[^\\s]*$", var.zmq.topic_prefix))
    error_message = "zmq.topic_prefix must not contain spaces."
  }
  validation {
    condition     = var.zmq.queue_depth == null || try(var.zmq.queue_depth >= 1 && floor(var.zmq.queue_depth) == var.zmq.queue_depth, false)
    error_message = "zmq.queue_depth must be a whole number, at least 1."
  }
  validation {
    condition     = var.zmq.replay_timeout == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", var.zmq.replay_timeout))
    error_message = "zmq.replay_timeout must be a Go duration such as 5s."
  }
}

variable "nats" {
  description = "KV events through NATS JetStream (celld nats); null turns it off. durable defaults to celld-<cell_id>-<replica> (celld derives it; each replica of each cell needs its own consumer). replay rebuilds the index from the stream when celld starts."
  type = object({
    url             = string
    stream          = optional(string)
    subject_prefix  = optional(string)
    durable         = optional(string)
    create_stream   = optional(bool)
    replay          = optional(bool)
    stream_max_age  = optional(string)
    ack_wait        = optional(string)
    max_ack_pending = optional(number)
  })
  default = null
  validation {
    condition     = var.nats == null || can(regex("^(nats|tls|ws|wss)://[^\\s]+$", var.nats.url))
    error_message = "nats.url must be a NATS URL such as nats://nats.nats.svc:4222."
  }
  validation {
    condition = var.nats == null || alltrue([
      for n in [try(var.nats.stream, null), try(var.nats.durable, null)] : n == null || can(regex("^[^\\s.*>/\\\\]+$", n))
    ])
    error_message = "nats.stream and nats.durable must be non-empty without '.', '*', '>', '/', '\\' or spaces."
  }
  validation {
    condition = var.nats == null || alltrue([
      for d in [try(var.nats.stream_max_age, null), try(var.nats.ack_wait, null)] : d == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", d))
    ])
    error_message = "nats.stream_max_age and nats.ack_wait must be Go durations such as 24h or 30s."
  }
}

# How the cell routes.

variable "routing" {
  description = <<-EOT
    The routing pipeline and data plane (celld routing). profile names the aggregated profile ("default" is the reference
    KV router: cost = kv_overlap_score_weight * prefill blocks + decode blocks, softmax at router_temperature, pods above
    busy_threshold skipped); prefill_profile and decode_profile together plan disaggregated serving. profiles_yaml adds
    profiles as the YAML list celld takes under routing.profiles (see cell/testdata/celld.example.yaml); celld
    --check-config validates them in CI. Timeouts are Go durations; max_attempts and max_body_bytes bound each request.
    tokenizer_json is a path inside the container (mount it yourself); without it text prompts go to a pod's /tokenize.
  EOT
  type = object({
    profile                 = optional(string)
    prefill_profile         = optional(string)
    decode_profile          = optional(string)
    kv_overlap_score_weight = optional(number)
    router_temperature      = optional(number)
    busy_threshold          = optional(number)
    profiles_yaml           = optional(string)
    session_header          = optional(string)
    session_ttl             = optional(string)
    connect_timeout         = optional(string)
    response_header_timeout = optional(string)
    request_timeout         = optional(string)
    max_attempts            = optional(number)
    max_body_bytes          = optional(number)
    tokenizer_json          = optional(string)
    chat_template           = optional(string)
    tokenize_timeout        = optional(string)
    candidates_ttl          = optional(string)
  })
  default  = {}
  nullable = false
  validation {
    condition     = (var.routing.prefill_profile == null) == (var.routing.decode_profile == null)
    error_message = "routing.prefill_profile and routing.decode_profile must be set together."
  }
  validation {
    condition     = var.routing.kv_overlap_score_weight == null || try(var.routing.kv_overlap_score_weight >= 0, false)
    error_message = "routing.kv_overlap_score_weight must not be negative."
  }
  validation {
    condition     = var.routing.router_temperature == null || try(var.routing.router_temperature >= 0, false)
    error_message = "routing.router_temperature must not be negative."
  }
  validation {
    condition     = var.routing.busy_threshold == null || try(var.routing.busy_threshold > 0 && var.routing.busy_threshold <= 1, false)
    error_message = "routing.busy_threshold must be in (0, 1]."
  }
  validation {
    condition     = var.routing.profiles_yaml == null || can(length(yamldecode(var.routing.profiles_yaml)) >= 0 && yamldecode(var.routing.profiles_yaml)[0].name != "")
    error_message = "routing.profiles_yaml must be a YAML list of profiles, each with a name."
  }
  validation {
    condition = alltrue([for d in [
      var.routing.session_ttl, var.routing.connect_timeout, var.routing.response_header_timeout,
      var.routing.request_timeout, var.routing.tokenize_timeout, var.routing.candidates_ttl,
    ] : d == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", d))])
    error_message = "routing timeouts and TTLs must be Go durations such as 2s, 5m or 100ms."
  }
  validation {
    condition     = var.routing.max_attempts == null || try(var.routing.max_attempts >= 1 && floor(var.routing.max_attempts) == var.routing.max_attempts, false)
    error_message = "routing.max_attempts must be a whole number, at least 1."
  }
  validation {
    condition     = var.routing.max_body_bytes == null || try(var.routing.max_body_bytes >= 1024 && floor(var.routing.max_body_bytes) == var.routing.max_body_bytes, false)
    error_message = "routing.max_body_bytes must be a whole number, at least 1024."
  }
  validation {
    condition     = var.routing.chat_template == null || var.routing.tokenizer_json != null
    error_message = "routing.chat_template needs routing.tokenizer_json."
  }
}

variable "timings" {
  description = "celld's clocks (Go durations): tick_interval (silent pods are looked for), health_interval (each pod's GET /health; \"0s\" turns it off), health_timeout, shutdown_timeout (graceful stop; the pod's termination grace period is derived from termination_grace_period_seconds)."
  type = object({
    tick_interval    = optional(string)
    health_interval  = optional(string)
    health_timeout   = optional(string)
    shutdown_timeout = optional(string)
  })
  default  = {}
  nullable = false
  validation {
    condition     = alltrue([for d in values(var.timings) : d == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", d))])
    error_message = "timings must be Go durations such as 1s or 5s."
  }
}

variable "snapshot" {
  description = <<-EOT
    Snapshots of the cell's index state (celld's snapshot section), so that a restarted celld loads its index instead of
    rebuilding it from the engines; null turns them off. They are written to an emptyDir volume at
    /var/lib/celld/snapshots, which outlives a crashed or OOM-killed container (the kubelet restarts it in the same pod)
    but not the pod itself. size_limit bounds the volume: a snapshot of the full Mooncake trace's index (3M blocks) takes
    about 160 MB, and keep of them are kept. interval and every_events say when one is written (besides on graceful
    shutdown). bootstrap_from_replicas makes a new replica that has no snapshot fetch one from a live replica through the
    cell's gRPC Service (CellService.StreamSnapshot; a starting replica is not ready, so the Service does not send it
    to itself); it needs replicas > 1.
  EOT
  type = object({
    interval                = optional(string)
    every_events            = optional(number)
    keep                    = optional(number)
    size_limit              = optional(string, "2Gi")
    bootstrap_from_replicas = optional(bool, false)
  })
  default = null
  validation {
    condition     = var.snapshot == null || try(var.snapshot.interval, null) == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", var.snapshot.interval))
    error_message = "snapshot.interval must be a Go duration such as 5m."
  }
  validation {
    condition     = var.snapshot == null || ((try(var.snapshot.keep, null) == null || try(var.snapshot.keep >= 1 && floor(var.snapshot.keep) == var.snapshot.keep, false)) && (try(var.snapshot.every_events, null) == null || try(var.snapshot.every_events >= 0 && floor(var.snapshot.every_events) == var.snapshot.every_events, false)))
    error_message = "snapshot.keep must be a whole number of at least 1, and snapshot.every_events a whole number (0 turns it off)."
  }
  validation {
    condition     = var.snapshot == null || can(regex("^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$", var.snapshot.size_limit))
    error_message = "snapshot.size_limit must be a Kubernetes quantity such as 2Gi."
  }
  validation {
    condition     = var.snapshot == null || !try(var.snapshot.bootstrap_from_replicas, false) || var.replicas > 1
    error_message = "snapshot.bootstrap_from_replicas needs replicas > 1: a lone celld has no replica to bootstrap from."
  }
}

# The gossip pool.

variable "gossip" {
  description = <<-EOT
    How the cell joins the global tier's gossip pool (celld gossip); null keeps the cell standalone. seeds are members
    to join, host:port (the global module's gossip_seed output, or its external_gossip_seed from another cluster).
    advertise_address is the IPv4 address other members reach this cell at: null advertises the pod IP, which
    works in one cluster and across clusters whose pod networks are routed to each other; set it to a reserved
    load-balancer IP when they are not, and the module adds a LoadBalancer Service (<name>-advertised) at that IP
    that forwards the gossip, HTTP and gRPC ports (globald dials the cell's APIs at the same host). The rest tunes the
    summary and failure detection; unset fields keep celld's defaults.
  EOT
  type = object({
    seeds                                  = list(string)
    port                                   = optional(number, 7947)
    advertise_address                      = optional(string)
    advertised_service_annotations         = optional(map(string), {})
    advertised_load_balancer_source_ranges = optional(list(string), [])
    summary_interval                       = optional(string)
    stride                                 = optional(number)
    false_positive_rate                    = optional(number)
    probe_interval                         = optional(string)
    probe_timeout                          = optional(string)
  })
  default = null
  validation {
    condition     = var.gossip == null || alltrue([for s in try(var.gossip.seeds, []) : can(regex("^[^\\s/]+:[0-9]{1,5}$", s))])
    error_message = "gossip.seeds must be host:port entries, without a scheme."
  }
  validation {
    condition     = var.gossip == null || try(var.gossip.port >= 1 && var.gossip.port <= 65535 && floor(var.gossip.port) == var.gossip.port, false)
    error_message = "gossip.port must be a port number from 1 to 65535."
  }
  validation {
    condition     = var.gossip == null || try(var.gossip.advertise_address == null || can(cidrhost("${var.gossip.advertise_address}/32", 0)), false)
    error_message = "gossip.advertise_address must be an IPv4 address without a port (memberlist advertises an IP; the gossip port is gossip.port)."
  }
  validation {
    condition     = var.gossip == null || try(var.gossip.stride == null || (var.gossip.stride >= 1 && floor(var.gossip.stride) == var.gossip.stride), false)
    error_message = "gossip.stride must be a whole number, at least 1."
  }
  validation {
    condition     = var.gossip == null || try(var.gossip.false_positive_rate == null || (var.gossip.false_positive_rate > 0 && var.gossip.false_positive_rate < 1), false)
    error_message = "gossip.false_positive_rate must be in (0, 1)."
  }
  validation {
    condition = var.gossip == null || alltrue([
      for d in [try(var.gossip.summary_interval, null), try(var.gossip.probe_interval, null), try(var.gossip.probe_timeout, null)] :
      d == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", d))
    ])
    error_message = "gossip.summary_interval, probe_interval and probe_timeout must be Go durations such as 2s or 500ms."
  }
}

variable "gossip_secret_key" {
  description = "The pool's encryption key: base64 of 16, 24 or 32 random bytes (openssl rand -base64 32), the same on every member (globald --gossip-secret-key). Stored in a Secret and passed to celld from it. null: an unencrypted pool."
  type        = string
  default     = null
  sensitive   = true
  validation {
    condition     = var.gossip_secret_key == null || can(regex("^([A-Za-z0-9+/]{22}==|[A-Za-z0-9+/]{32}|[A-Za-z0-9+/]{43}=)$", var.gossip_secret_key))
    error_message = "gossip_secret_key must be standard base64 of 16, 24 or 32 bytes (24, 32 or 44 characters)."
  }
}

# Kubernetes plumbing.

variable "ports" {
  description = "celld's container and Service ports: http (OpenAI data plane, REST control plane, /metrics, /healthz, /readyz) and grpc (CellService, EventPublisher)."
  type = object({
    http = optional(number, 8080)
    grpc = optional(number, 9090)
  })
  default  = {}
  nullable = false
  validation {
    condition     = alltrue([for p in values(var.ports) : p >= 1 && p <= 65535 && floor(p) == p]) && var.ports.http != var.ports.grpc
    error_message = "ports.http and ports.grpc must be distinct port numbers from 1 to 65535."
  }
}

variable "service" {
  description = "The cell's Service (<name>), which carries the http and grpc ports (and zmq with zmq.bind_port): its type, annotations (e.g. for an internal load balancer) and, for a LoadBalancer, the source ranges allowed."
  type = object({
    type                        = optional(string, "ClusterIP")
    annotations                 = optional(map(string), {})
    load_balancer_source_ranges = optional(list(string), [])
  })
  default  = {}
  nullable = false
  validation {
    condition     = contains(["ClusterIP", "NodePort", "LoadBalancer"], var.service.type)
    error_message = "service.type must be ClusterIP, NodePort or LoadBalancer."
  }
}

variable "resources" {
  description = "celld's CPU and memory requests and limits (Kubernetes quantities). The index needs about 30 bytes per block of index.max_blocks (default 2^25 blocks, about 1 GiB at most) plus the per-pod translation tables."
  type = object({
    requests = optional(map(string), { cpu = "500m", memory = "512Mi" })
    limits   = optional(map(string), { memory = "2Gi" })
  })
  default  = {}
  nullable = false
  validation {
    condition     = alltrue([for k in concat(keys(var.resources.requests), keys(var.resources.limits)) : contains(["cpu", "memory", "ephemeral-storage"], k)])
    error_message = "resources.requests and resources.limits take cpu, memory and ephemeral-storage."
  }
}

variable "termination_grace_period_seconds" {
  description = "How long Kubernetes waits for celld to stop (leave the pool, finish streams) before it kills it; keep it above timings.shutdown_timeout."
  type        = number
  default     = 30
  validation {
    condition     = var.termination_grace_period_seconds >= 1 && floor(var.termination_grace_period_seconds) == var.termination_grace_period_seconds
    error_message = "termination_grace_period_seconds must be a whole number, at least 1."
  }
}

variable "pdb_max_unavailable" {
  description = "The PodDisruptionBudget's maxUnavailable: celld pods a voluntary disruption (a node drain) may take down at once. With one replica, 1 lets drains proceed (the cell restarts elsewhere and globald routes around it meanwhile); 0 blocks them."
  type        = number
  default     = 1
  validation {
    condition     = var.pdb_max_unavailable >= 0 && floor(var.pdb_max_unavailable) == var.pdb_max_unavailable
    error_message = "pdb_max_unavailable must be a whole number, 0 or more."
  }
}

variable "log_level" {
  description = "celld's log level."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "otlp_endpoint" {
  description = "OTLP/gRPC endpoint traces are exported to (OTEL_EXPORTER_OTLP_ENDPOINT), e.g. http://otel-collector.observability:4317; null: no tracing."
  type        = string
  default     = null
  validation {
    condition     = var.otlp_endpoint == null || can(regex("^https?://[^\\s]+$", var.otlp_endpoint))
    error_message = "otlp_endpoint must be an http:// or https:// URL."
  }
}

variable "prometheus_scrape" {
  description = "Annotate the pods for Prometheus scraping (prometheus.io/scrape, port and path /metrics)."
  type        = bool
  default     = true
}

variable "node_selector" {
  description = "Node labels celld (and the demo engines) must be scheduled on."
  type        = map(string)
  default     = {}
}

# The demo.

variable "demo_engines" {
  description = "Run simulated vLLM engines (loadtest enginesim, one per pod of a StatefulSet <name>-engine) and add them to the cell's pods, for a demo without GPUs: count pods serving model, each with blocks KV blocks of the router's block size, answering at time_scale times the modelled latency. null: none."
  type = object({
    count      = optional(number, 2)
    model      = optional(string, "enginesim")
    blocks     = optional(number, 4096)
    time_scale = optional(number, 1)
    resources = optional(object({
      requests = optional(map(string), { cpu = "100m", memory = "128Mi" })
      limits   = optional(map(string), { memory = "512Mi" })
    }), {})
  })
  default = null
  validation {
    condition     = var.demo_engines == null || try(var.demo_engines.count >= 1 && var.demo_engines.count <= 256 && floor(var.demo_engines.count) == var.demo_engines.count, false)
    error_message = "demo_engines.count must be a whole number from 1 to 256."
  }
  validation {
    condition     = var.demo_engines == null || try(can(regex("^[^\\s@]+$", var.demo_engines.model)) && var.demo_engines.blocks >= 1 && var.demo_engines.time_scale >= 0, false)
    error_message = "demo_engines.model must be a name without spaces or '@', blocks at least 1 and time_scale not negative."
  }
}

variable "wait_for_rollout" {
  description = "Make apply wait until the celld pods are ready (every event source connected and caught up)."
  type        = bool
  default     = true
}
