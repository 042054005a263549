# globald as the endpoint picker of a global gateway.

variable "epp" {
  description = <<-EOT
    Serve globald's endpoint picker (the Gateway API Inference Extension's ext_proc protocol, globald --epp-addr) on
    port, behind the Service <name>-epp (appProtocol http2), for a global gateway: it picks a cell as the data plane
    does and answers with that cell's gateway (celld gossip.gateway_address, the cell module's epp.gateway_address),
    then the next cells' as fallbacks. It serves TLS when globald does (security.serve_tls). null: no picker.
  EOT
  type = object({
    port = optional(number, 9003)
  })
  default = null
  validation {
    condition     = var.epp == null || try(var.epp.port >= 1 && var.epp.port <= 65535 && floor(var.epp.port) == var.epp.port, false)
    error_message = "epp.port must be a port number from 1 to 65535."
  }
}
