# Following a live fleet, and securing the cell.

variable "discovery" {
  description = <<-EOT
    Follow the engine pods through the Kubernetes API (celld discovery.kubernetes) instead of, or besides, a static
    pods list: the Pods of namespace ("" = the cell's own) matching selector (a label selector such as "app=vllm"), or
    the selector and targetPorts of the InferencePool (inference.networking.k8s.io/v1) named inference_pool. Each Ready
    pod is routed to at pod IP:target_port and its KV events dialed at pod IP:zmq_port (0: the pod publishes none) with
    its replay socket at pod IP:replay_port (0: none). With demo_engines and neither selector nor inference_pool, the
    cell discovers the demo engines. Static pods (var.pods) combine with discovered ones; a static id wins. The module
    creates a ServiceAccount, and a Role and RoleBinding in the watched namespace allowing get, list and watch on pods
    and inferencepools, nothing more. null: static pods only.
  EOT
  type = object({
    selector       = optional(string, "")
    inference_pool = optional(string, "")
    namespace      = optional(string, "")
    target_port    = optional(number, 8000)
    zmq_port       = optional(number, 5557)
    replay_port    = optional(number, 5558)
  })
  default = null
  validation {
    condition     = var.discovery == null || try(var.discovery.selector == "" || var.discovery.inference_pool == "", false)
    error_message = "discovery.selector and discovery.inference_pool are exclusive: set one."
  }
  validation {
    condition     = var.discovery == null || try(var.discovery.selector != "" || var.discovery.inference_pool != "" || var.demo_engines != null, false)
    error_message = "discovery needs a selector or an inference_pool (or demo_engines, whose pods it then selects)."
  }
  validation {
    condition     = var.discovery == null || try(var.discovery.inference_pool == "" || can(regex("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", var.discovery.inference_pool)), false)
    error_message = "discovery.inference_pool must be a Kubernetes object name (lower-case letters, digits, '-' and '.')."
  }
  validation {
    condition     = var.discovery == null || try(var.discovery.selector == "" || can(regex("^[^\\s]+$", var.discovery.selector)), false)
    error_message = "discovery.selector must be a label selector without spaces, such as app=vllm,tier!=canary."
  }
  validation {
    condition     = var.discovery == null || try(var.discovery.namespace == "" || can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.discovery.namespace)), false)
    error_message = "discovery.namespace must be a DNS label, or \"\" for the cell's own namespace."
  }
  validation {
    condition = var.discovery == null || try(
      var.discovery.target_port >= 1 && var.discovery.target_port <= 65535 && floor(var.discovery.target_port) == var.discovery.target_port &&
      var.discovery.zmq_port >= 0 && var.discovery.zmq_port <= 65535 && floor(var.discovery.zmq_port) == var.discovery.zmq_port &&
      var.discovery.replay_port >= 0 && var.discovery.replay_port <= 65535 && floor(var.discovery.replay_port) == var.discovery.replay_port
    , false)
    error_message = "discovery.target_port must be a port from 1 to 65535, zmq_port and replay_port from 0 (none) to 65535."
  }
}

variable "api_keys" {
  description = <<-EOT
    The API key file (README, Security: tenants, limits, key hashes and scopes) celld reads as auth.key_file, from a
    Secret mounted read-only as a directory, so that a change to the Secret reaches celld without a restart (it reads
    the file again every auth.reload_interval). Either key_file, the file's YAML (the module creates the Secret
    <name>-api-keys), or secret_name, an existing Secret holding it under key. null: no API keys.
  EOT
  type = object({
    key_file    = optional(string)
    secret_name = optional(string)
    key         = optional(string, "api-keys.yaml")
  })
  default = null
  validation {
    condition     = var.api_keys == null || try((var.api_keys.key_file == null) != (var.api_keys.secret_name == null), false)
    error_message = "api_keys takes key_file (the module creates the Secret) or secret_name (an existing Secret), exactly one."
  }
  validation {
    condition     = var.api_keys == null || try(can(regex("^[-._a-zA-Z0-9]+$", var.api_keys.key)), false)
    error_message = "api_keys.key must be a Secret key: letters, digits, '-', '_' and '.'."
  }
}

variable "tls" {
  description = <<-EOT
    Mutual TLS of celld's HTTP and gRPC servers (celld tls: the hop from globald), from a Secret mounted read-only as a
    directory, so that a renewed certificate applies without a restart: either cert_pem, key_pem and ca_pem (the
    module creates the Secret <name>-tls) or secret_name, an existing Secret in cert-manager's layout (tls.crt, tls.key,
    ca.crt). The certificate needs the serverAuth and clientAuth usages and the name globald checks
    (globald tls.server_name). Kubelet probes carry no client certificate, so the servers take client_auth
    verify_if_given: callers without a certificate of the CA need an API key, hence api_keys is required. null:
    plaintext servers.
  EOT
  type = object({
    cert_pem    = optional(string)
    key_pem     = optional(string)
    ca_pem      = optional(string)
    secret_name = optional(string)
  })
  default   = null
  sensitive = true
  validation {
    condition = var.tls == null || try(
      (var.tls.secret_name != null && var.tls.cert_pem == null && var.tls.key_pem == null && var.tls.ca_pem == null) ||
      (var.tls.secret_name == null && var.tls.cert_pem != null && var.tls.key_pem != null && var.tls.ca_pem != null)
    , false)
    error_message = "tls takes cert_pem, key_pem and ca_pem together (the module creates the Secret) or secret_name (an existing Secret with tls.crt, tls.key and ca.crt), not both."
  }
  validation {
    condition     = var.tls == null || var.api_keys != null
    error_message = "tls needs api_keys: kubelet's probes reach celld without a client certificate, so its servers admit callers without one (client_auth verify_if_given), which an API key must then authenticate."
  }
}
