variable "kubeconfig" {
  description = "Path of the kubeconfig file that reaches the cluster."
  type        = string
  default     = "~/.kube/config"
}

variable "kube_context" {
  description = "The kubeconfig context of the cluster; null: the current context."
  type        = string
  default     = null
}

variable "namespace" {
  description = "Namespace for the global tier, the cells and the demo engines."
  type        = string
  default     = "cellrouter"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS label."
  }
}

variable "create_namespace" {
  description = "Create the namespace (false: it exists already)."
  type        = bool
  default     = true
}

variable "image" {
  description = "The cellrouter image every pod runs (deploy/image/build.sh prints it), pushed where the cluster pulls from or loaded into the nodes."
  type        = string
  validation {
    condition     = can(regex("^[^\\s]+$", var.image))
    error_message = "image must be an image reference without spaces."
  }
}

variable "image_pull_policy" {
  description = "Pull policy of every container: IfNotPresent suits an image loaded into the nodes (kind load, k3s import)."
  type        = string
  default     = "IfNotPresent"
}

variable "global_replicas" {
  description = "globald replicas behind the global endpoint."
  type        = number
  default     = 2
}

variable "cells" {
  description = "The cells, by name (each one celld, its Services and ConfigMap): demo_engines simulated vLLM pods each (0: none), which the cell discovers through the Kubernetes API; discovery (the cell module's) to follow real engine pods by label selector or InferencePool; and static pods (the cell module's pods), which combine with discovered ones."
  type = map(object({
    demo_engines = optional(number, 2)
    discovery = optional(object({
      selector       = optional(string, "")
      inference_pool = optional(string, "")
      namespace      = optional(string, "")
      target_port    = optional(number, 8000)
      zmq_port       = optional(number, 5557)
      replay_port    = optional(number, 5558)
    }))
    pods = optional(list(object({
      id                 = string
      address            = string
      role               = optional(string, "both")
      model              = optional(string)
      zmq_endpoint       = optional(string)
      replay_endpoint    = optional(string)
      kv_blocks          = optional(number)
      data_parallel_size = optional(number)
    })), [])
  }))
  default = {
    "cell-a" = {}
    "cell-b" = {}
  }
  validation {
    condition     = length(var.cells) >= 1 && alltrue([for c in values(var.cells) : c.demo_engines + length(c.pods) >= 1 || c.discovery != null])
    error_message = "cells needs at least one cell, and each cell at least one demo engine, pod or discovery."
  }
}

variable "demo_model" {
  description = "The model name the demo engines serve (what requests name in \"model\")."
  type        = string
  default     = "enginesim"
}

variable "gossip_secret_key" {
  description = "The gossip pool's encryption key (openssl rand -base64 32); null: unencrypted."
  type        = string
  default     = null
  sensitive   = true
}

variable "api_keys" {
  description = "The API key file (README, Security) of globald and every cell: key_file, its YAML (globald keygen prints entries), from which the modules create Secrets; or secret_name, an existing Secret in the namespace holding it under api-keys.yaml. Required: the example deploys secure."
  type = object({
    key_file    = optional(string)
    secret_name = optional(string)
  })
  nullable = false
}

variable "tls" {
  description = <<-EOT
    The tier certificates (README, Security: one CA, serverAuth and clientAuth usages): every hop from globald to a
    cell is mutual TLS. Either PEMs (ca_pem, and cert_pem and key_pem of global and of cell; the modules create the
    Secrets), or existing Secrets in cert-manager's layout (global_secret_name, cell_secret_name: tls.crt, tls.key,
    ca.crt). The cells' certificate carries server_name as a DNS name, which globald checks (cells advertise pod IPs).
    Required: the example deploys secure.
  EOT
  type = object({
    ca_pem             = optional(string)
    global             = optional(object({ cert_pem = string, key_pem = string }))
    cell               = optional(object({ cert_pem = string, key_pem = string }))
    global_secret_name = optional(string)
    cell_secret_name   = optional(string)
    server_name        = optional(string, "cellrouter-cell")
  })
  nullable  = false
  sensitive = true
}

variable "wait_for_rollout" {
  description = "Make apply wait until globald, the cells and the demo engines are ready; false returns once the objects are accepted (a control plane without nodes, CI)."
  type        = bool
  default     = true
}
