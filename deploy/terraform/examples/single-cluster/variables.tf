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
  description = "The cells, by name (each one celld, its Services and ConfigMap): demo_engines simulated vLLM pods each (0: none), plus the real engine pods it routes to (the cell module's pods)."
  type = map(object({
    demo_engines = optional(number, 2)
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
    condition     = length(var.cells) >= 1 && alltrue([for c in values(var.cells) : c.demo_engines + length(c.pods) >= 1])
    error_message = "cells needs at least one cell, and each cell at least one demo engine or pod."
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
