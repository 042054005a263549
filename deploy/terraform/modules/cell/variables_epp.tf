# celld as the Endpoint Picker of an InferencePool (epp.tf).

variable "epp" {
  description = <<-EOT
    Run celld as the Endpoint Picker of an InferencePool (Gateway API Inference Extension, inference.networking.k8s.io/v1):
    celld serves the ext_proc protocol on port (celld epp_addr), behind the Service <name>-epp (appProtocol http2) that
    the pool's endpointPickerRef names, with failure_mode FailClose (the gateway refuses requests while the picker does
    not answer) or FailOpen (the gateway picks an endpoint itself). With inference_pool the module also creates the pool
    (its CRD must be installed): its name, the engine pods' selector labels, their target_ports and optional app_protocol
    ("http" or "kubernetes.io/h2c"); without it, point an existing pool's endpointPickerRef at <name>-epp. celld follows
    the pool's pods through discovery.inference_pool (set discovery = { inference_pool = <the pool's name> }).
    gateway_address ("host:port": where the pool's Gateway takes requests) is advertised to the global tier (celld
    gossip.gateway_address), whose own picker (globald --epp-addr) then answers a global gateway with it. null: no picker.
  EOT
  type = object({
    port            = optional(number, 9002)
    failure_mode    = optional(string, "FailClose")
    gateway_address = optional(string)
    inference_pool = optional(object({
      name         = string
      selector     = map(string)
      target_ports = optional(list(number), [8000])
      app_protocol = optional(string)
    }))
  })
  default = null
  validation {
    condition     = var.epp == null || try(contains(["FailOpen", "FailClose"], var.epp.failure_mode), false)
    error_message = "epp.failure_mode must be FailOpen or FailClose."
  }
  validation {
    condition     = var.epp == null || try(var.epp.port >= 1 && var.epp.port <= 65535 && floor(var.epp.port) == var.epp.port, false)
    error_message = "epp.port must be a port from 1 to 65535."
  }
  validation {
    condition     = var.epp == null || try(var.epp.gateway_address == null || can(regex("^[^\\s:]+:[0-9]{1,5}$|^\\[[0-9a-fA-F:.]+\\]:[0-9]{1,5}$", var.epp.gateway_address)), false)
    error_message = "epp.gateway_address must be host:port (an address another cluster's gateway can dial), or null."
  }
  validation {
    condition     = var.epp == null || try(var.epp.gateway_address == null || var.gossip != null, false)
    error_message = "epp.gateway_address is advertised through gossip: it needs gossip."
  }
  validation {
    condition = var.epp == null || try(var.epp.inference_pool == null || (
      can(regex("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", var.epp.inference_pool.name)) &&
      length(var.epp.inference_pool.selector) > 0 &&
      length(var.epp.inference_pool.target_ports) >= 1 && length(var.epp.inference_pool.target_ports) <= 8 &&
      alltrue([for p in var.epp.inference_pool.target_ports : p >= 1 && p <= 65535 && floor(p) == p]) &&
      contains(["http", "kubernetes.io/h2c", "null"], coalesce(var.epp.inference_pool.app_protocol, "null"))
    ), false)
    error_message = "epp.inference_pool needs a Kubernetes object name, a non-empty selector, 1 to 8 target_ports from 1 to 65535 and an app_protocol of http or kubernetes.io/h2c (or null)."
  }
}
