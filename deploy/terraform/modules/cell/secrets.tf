# The API key file and the tier certificate, each from a Secret (created
# here from variables, or an existing one such as cert-manager's), mounted
# read-only as a directory: not through subPath, which would freeze the
# file, so that a rotated Secret reaches celld, which reads the files again
# every auth.reload_interval and applies a change without a restart.

locals {
  keys_dir = "/etc/cellrouter/keys"
  tls_dir  = "/etc/cellrouter/tls"

  has_keys = var.api_keys != null
  has_tls  = nonsensitive(var.tls != null)

  keys_secret = !local.has_keys ? null : (var.api_keys.secret_name != null ? var.api_keys.secret_name : "${var.name}-api-keys")
  keys_key    = !local.has_keys ? null : var.api_keys.key
  tls_secret  = !local.has_tls ? null : (nonsensitive(var.tls.secret_name != null) ? nonsensitive(var.tls.secret_name) : "${var.name}-tls")

  auth = !local.has_keys ? {} : { key_file = "${local.keys_dir}/${local.keys_key}" }
  tls = !local.has_tls ? {} : {
    cert_file   = "${local.tls_dir}/tls.crt"
    key_file    = "${local.tls_dir}/tls.key"
    ca_file     = "${local.tls_dir}/ca.crt"
    client_auth = "verify_if_given"
  }
  probe_scheme = local.has_tls ? "HTTPS" : "HTTP"
}

resource "kubernetes_secret_v1" "api_keys" {
  count = local.has_keys && try(var.api_keys.key_file != null, false) ? 1 : 0
  metadata {
    name      = local.keys_secret
    namespace = var.namespace
    labels    = local.labels
  }
  data = {
    (local.keys_key) = var.api_keys.key_file
  }
}

resource "kubernetes_secret_v1" "tls" {
  count = local.has_tls && nonsensitive(try(var.tls.secret_name == null, false)) ? 1 : 0
  metadata {
    name      = local.tls_secret
    namespace = var.namespace
    labels    = local.labels
  }
  type = "kubernetes.io/tls"
  data = {
    "tls.crt" = var.tls.cert_pem
    "tls.key" = var.tls.key_pem
    "ca.crt"  = var.tls.ca_pem
  }
}
