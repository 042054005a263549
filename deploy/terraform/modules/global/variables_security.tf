# API keys and the tier certificate.

variable "api_keys" {
  description = <<-EOT
    The API key file (README, Security) globald reads with --api-keys, from a Secret mounted read-only as a directory,
    so that a change to the Secret reaches globald without a restart (it reads the file again every 2 s). Either
    key_file, the file's YAML (the module creates the Secret <name>-api-keys), or secret_name, an existing Secret
    holding it under key. Required when the global endpoint is reachable from outside the cluster (service.type
    LoadBalancer or NodePort). null: no API keys.
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
    The tier certificate (globald --tls-cert, --tls-key, --tls-ca): every probe, hand-off and tokenize call to a cell
    is then mutual TLS, and cells whose certificate the CA did not sign are refused. From a Secret mounted read-only as
    a directory (a renewed certificate applies without a restart): cert_pem, key_pem and ca_pem (the module creates
    the Secret <name>-tls) or secret_name, an existing Secret in cert-manager's layout (tls.crt, tls.key, ca.crt).
    server_name is the name the cells' certificates carry (--tls-server-name; needed on Kubernetes, where cells
    advertise pod IPs). serve also serves globald's own listeners over TLS (--serve-tls; the probes then speak HTTPS).
    null: plaintext hops to the cells.
  EOT
  type = object({
    cert_pem    = optional(string)
    key_pem     = optional(string)
    ca_pem      = optional(string)
    secret_name = optional(string)
    server_name = optional(string)
    serve       = optional(bool, false)
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
    condition     = var.tls == null || try(var.tls.server_name == null || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.tls.server_name)), false)
    error_message = "tls.server_name must be a DNS name."
  }
}
