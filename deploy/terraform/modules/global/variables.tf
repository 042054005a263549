# Identity and image.

variable "name" {
  description = "Name of the global tier's Kubernetes objects: the globald Deployment and its Service, and the prefix of the others (<name>-gossip, <name>-gossip-lb). A DNS label of at most 40 characters."
  type        = string
  default     = "globald"
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$", var.name))
    error_message = "name must be a DNS label of 1 to 40 characters: lower-case letters, digits and '-', starting with a letter and not ending with '-'."
  }
}

variable "namespace" {
  description = "Namespace the global tier is deployed in (it must exist)."
  type        = string
  default     = "default"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS label (lower-case letters, digits and '-', at most 63 characters)."
  }
}

variable "image" {
  description = "The cellrouter image (deploy/image/build.sh), e.g. registry.example.com/cellrouter:v1.2.0."
  type        = string
  validation {
    condition     = can(regex("^[^\\s]+$", var.image))
    error_message = "image must be a non-empty image reference without spaces."
  }
}

variable "image_pull_policy" {
  description = "Pull policy of the globald container."
  type        = string
  default     = "IfNotPresent"
  validation {
    condition     = contains(["Always", "IfNotPresent", "Never"], var.image_pull_policy)
    error_message = "image_pull_policy must be Always, IfNotPresent or Never."
  }
}

variable "replicas" {
  description = "globald replicas behind the Service. Each learns every cell through gossip on its own (they share no state), so any replica can serve any request; each is its own member of the pool, named global/<pod name>."
  type        = number
  default     = 2
  validation {
    condition     = var.replicas >= 1 && var.replicas <= 64 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number from 1 to 64."
  }
}

variable "labels" {
  description = "Extra labels on every object the module creates and on the pods."
  type        = map(string)
  default     = {}
}

variable "cluster_domain" {
  description = "The cluster's DNS domain, for the endpoints and the gossip seed the module reports."
  type        = string
  default     = "cluster.local"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.cluster_domain))
    error_message = "cluster_domain must be a DNS name such as cluster.local."
  }
}

# globald's flags.

variable "routing" {
  description = <<-EOT
    globald's routing flags; unset fields keep globald's defaults. block_size (the cells' router block in tokens),
    max_probes (most cells probed per request), probe_slack (also probe cells within this many blocks of the best
    estimate), cold_blocks (leading blocks that name a cold prompt for the two-choice hash), probe_timeout, prefill_weight
    (cost of a block to prefill against a block of load), rtt_weight (cost of a millisecond of probe round trip, in
    blocks), max_attempts (cells tried before the first byte), request_timeout (bound of a whole hand-off), move_weight (cost of
    a block a cell lacks against the deepest answer, beside its prefill: what moving a conversation costs), probe_cold
    (probe a cold prompt's rendezvous-hashed cells; false: the less loaded of two, unprobed), pressure_weight (cost of a
    cached block a cell's pick would evict; keep it the cells' routing.kv_pressure_weight), full_at (the estimated cache
    fullness, in (0, 1], from which the search counts a cell as full and lets load decide), avoid_busy (a cell whose pick is
    busy goes after every cell whose pick is not, whatever the costs; false: the cost decides and busy breaks ties).
  EOT
  type = object({
    block_size      = optional(number)
    max_probes      = optional(number)
    probe_slack     = optional(number)
    cold_blocks     = optional(number)
    probe_timeout   = optional(string)
    prefill_weight  = optional(number)
    rtt_weight      = optional(number)
    max_attempts    = optional(number)
    request_timeout = optional(string)
    move_weight     = optional(number)
    probe_cold      = optional(bool)
    pressure_weight = optional(number)
    full_at         = optional(number)
    avoid_busy      = optional(bool)
  })
  default  = {}
  nullable = false
  validation {
    condition     = var.routing.block_size == null || try(contains([1, 2, 4, 8, 16, 32, 64, 128, 256, 512], var.routing.block_size), false)
    error_message = "routing.block_size must be a power of two from 1 to 512, the cells' events.block_size."
  }
  validation {
    condition = alltrue([for n in [var.routing.max_probes, var.routing.cold_blocks, var.routing.max_attempts] :
    n == null || try(n >= 1 && floor(n) == n, false)])
    error_message = "routing.max_probes, cold_blocks and max_attempts must be whole numbers, at least 1."
  }
  validation {
    condition     = var.routing.probe_slack == null || try(var.routing.probe_slack >= 0 && floor(var.routing.probe_slack) == var.routing.probe_slack, false)
    error_message = "routing.probe_slack must be a whole number, 0 or more."
  }
  validation {
    condition     = alltrue([for w in [var.routing.prefill_weight, var.routing.rtt_weight] : w == null || try(w >= 0, false)])
    error_message = "routing.prefill_weight and rtt_weight must not be negative."
  }
  validation {
    condition     = var.routing.pressure_weight == null || try(var.routing.pressure_weight >= 0, false)
    error_message = "routing.pressure_weight must not be negative."
  }
  validation {
    condition     = var.routing.full_at == null || try(var.routing.full_at > 0 && var.routing.full_at <= 1, false)
    error_message = "routing.full_at must be in (0, 1]: the fullness from which a cell counts as full."
  }
  validation {
    condition = alltrue([for d in [var.routing.probe_timeout, var.routing.request_timeout] :
    d == null || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", d))])
    error_message = "routing.probe_timeout and request_timeout must be Go durations such as 50ms or 10m."
  }
}

variable "ports" {
  description = "globald's container and Service ports: http (OpenAI data plane, REST control plane, /metrics, /healthz, /readyz), grpc (GlobalService) and gossip (memberlist, TCP and UDP)."
  type = object({
    http   = optional(number, 8090)
    grpc   = optional(number, 8091)
    gossip = optional(number, 7946)
  })
  default  = {}
  nullable = false
  validation {
    condition     = alltrue([for p in values(var.ports) : p >= 1 && p <= 65535 && floor(p) == p]) && length(distinct(values(var.ports))) == 3
    error_message = "ports.http, grpc and gossip must be distinct port numbers from 1 to 65535."
  }
}

# The gossip pool.

variable "seeds" {
  description = "Other pool members to join (host:port), beyond the replicas of this Deployment, which find each other through the gossip Service. Cells usually join globald rather than the other way round, so this is often empty."
  type        = list(string)
  default     = []
  nullable    = false
  validation {
    condition     = alltrue([for s in var.seeds : can(regex("^[^\\s/]+:[0-9]{1,5}$", s))])
    error_message = "seeds must be host:port entries, without a scheme."
  }
}

variable "gossip_secret_key" {
  description = "The pool's encryption key: base64 of 16, 24 or 32 random bytes, the same on every member (the cells' gossip_secret_key). Stored in a Secret and passed to globald from it. null: an unencrypted pool."
  type        = string
  default     = null
  sensitive   = true
  validation {
    condition     = var.gossip_secret_key == null || can(regex("^([A-Za-z0-9+/]{22}==|[A-Za-z0-9+/]{32}|[A-Za-z0-9+/]{43}=)$", var.gossip_secret_key))
    error_message = "gossip_secret_key must be standard base64 of 16, 24 or 32 bytes (24, 32 or 44 characters)."
  }
}

variable "gossip_load_balancer" {
  description = <<-EOT
    A LoadBalancer Service (<name>-gossip-lb) on the gossip port, the seed cells in other clusters join through
    (output external_gossip_seed). ip reserves its address (spec.loadBalancerIP), which makes the seed known at plan
    time; annotations select an internal load balancer on your cloud. A seed only serves the join: afterwards members
    talk to each other at their advertised addresses (globald advertises its pod IP), so the pod networks must be
    routed between the clusters. null: none.
  EOT
  type = object({
    ip                          = optional(string)
    annotations                 = optional(map(string), {})
    load_balancer_source_ranges = optional(list(string), [])
  })
  default = null
  validation {
    condition     = var.gossip_load_balancer == null || try(var.gossip_load_balancer.ip == null || can(cidrhost("${var.gossip_load_balancer.ip}/32", 0)), false)
    error_message = "gossip_load_balancer.ip must be an IPv4 address."
  }
}

# Kubernetes plumbing.

variable "service" {
  description = "The global endpoint's Service (<name>), which carries the http and grpc ports: its type, annotations and, for a LoadBalancer, the source ranges allowed."
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
  validation {
    condition     = var.service.type == "ClusterIP" || var.api_keys != null
    error_message = "A LoadBalancer or NodePort global endpoint is reachable from outside the cluster: it needs api_keys (README, Security)."
  }
}

variable "resources" {
  description = "globald's CPU and memory requests and limits (Kubernetes quantities). Its memory is the cells' summaries: about the sum of their Bloom filters (a few MiB per busy cell)."
  type = object({
    requests = optional(map(string), { cpu = "250m", memory = "256Mi" })
    limits   = optional(map(string), { memory = "1Gi" })
  })
  default  = {}
  nullable = false
  validation {
    condition     = alltrue([for k in concat(keys(var.resources.requests), keys(var.resources.limits)) : contains(["cpu", "memory", "ephemeral-storage"], k)])
    error_message = "resources.requests and resources.limits take cpu, memory and ephemeral-storage."
  }
}

variable "termination_grace_period_seconds" {
  description = "How long Kubernetes waits for globald to stop (leave the pool, finish hand-offs) before it kills it."
  type        = number
  default     = 30
  validation {
    condition     = var.termination_grace_period_seconds >= 1 && floor(var.termination_grace_period_seconds) == var.termination_grace_period_seconds
    error_message = "termination_grace_period_seconds must be a whole number, at least 1."
  }
}

variable "pdb_max_unavailable" {
  description = "The PodDisruptionBudget's maxUnavailable: globald pods a voluntary disruption may take down at once."
  type        = number
  default     = 1
  validation {
    condition     = var.pdb_max_unavailable >= 0 && floor(var.pdb_max_unavailable) == var.pdb_max_unavailable
    error_message = "pdb_max_unavailable must be a whole number, 0 or more."
  }
}

variable "log_level" {
  description = "globald's log level."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "otlp_endpoint" {
  description = "OTLP/gRPC endpoint traces are exported to (OTEL_EXPORTER_OTLP_ENDPOINT); null: no tracing."
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
  description = "Node labels globald must be scheduled on."
  type        = map(string)
  default     = {}
}

variable "wait_for_rollout" {
  description = "Make apply wait until the globald pods are ready. globald reports ready only once it knows a usable cell, so this is off by default: the cells usually come up in the same apply, or later."
  type        = bool
  default     = false
}
