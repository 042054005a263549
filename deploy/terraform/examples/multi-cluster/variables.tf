variable "kubeconfig" {
  description = "Path of the kubeconfig file that holds the three contexts."
  type        = string
  default     = "~/.kube/config"
}

variable "contexts" {
  description = "The kubeconfig context of each cluster: global runs the global tier, east and west run one cell each. global may name the same cluster as east or west."
  type = object({
    global = string
    east   = string
    west   = string
  })
}

variable "namespace" {
  description = "Namespace used in every cluster (created by the example)."
  type        = string
  default     = "cellrouter"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS label."
  }
}

variable "image" {
  description = "The cellrouter image (deploy/image/build.sh), in a registry every cluster pulls from."
  type        = string
  validation {
    condition     = can(regex("^[^\\s]+$", var.image))
    error_message = "image must be an image reference without spaces."
  }
}

variable "global_gossip_ip" {
  description = "A reserved internal load-balancer IP in the global cluster's network for globald's gossip load balancer: the seed the cells in the other clusters join through."
  type        = string
  validation {
    condition     = can(cidrhost("${var.global_gossip_ip}/32", 0))
    error_message = "global_gossip_ip must be an IPv4 address."
  }
}

variable "internal_load_balancer_annotations" {
  description = "Annotations that make a Service of type LoadBalancer internal on your cloud, e.g. {\"networking.gke.io/load-balancer-type\" = \"Internal\"} (GKE), {\"service.beta.kubernetes.io/aws-load-balancer-scheme\" = \"internal\"} (AWS Load Balancer Controller) or {\"service.beta.kubernetes.io/azure-load-balancer-internal\" = \"true\"} (AKS)."
  type        = map(string)
  default     = {}
}

variable "cell_advertise_addresses" {
  description = "Per cell cluster, a reserved internal load-balancer IP the cell advertises to the pool instead of its pod IP (null: the pod IP, for pod networks routed between the clusters). See the README for what each needs."
  type = object({
    east = optional(string)
    west = optional(string)
  })
  default  = {}
  nullable = false
}

variable "demo_engines" {
  description = "Simulated vLLM pods per cell (0: none; list real engines in the cell modules' pods instead)."
  type        = number
  default     = 2
  validation {
    condition     = var.demo_engines >= 0 && var.demo_engines <= 256 && floor(var.demo_engines) == var.demo_engines
    error_message = "demo_engines must be a whole number from 0 to 256."
  }
}

variable "demo_model" {
  description = "The model name the demo engines serve."
  type        = string
  default     = "enginesim"
}

variable "gossip_secret_key" {
  description = "The gossip pool's encryption key (openssl rand -base64 32), the same in every cluster. Traffic between clusters should be encrypted: set it."
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
