# The API key file and the tier certificate, each from a Secret (created
# here from variables, or an existing one such as cert-manager's), mounted
# read-only as a directory: not through subPath, which would freeze the
# file, so that a rotated Secret reaches globald, which reads the files
# again on change and applies them without a restart.

locals {
  keys_dir = "/etc/globald/keys"
  tls_dir  = "/etc/globald/tls"

  has_keys = var.api_keys != null
  has_tls  = nonsensitive(var.tls != null)

  keys_secret = !local.has_keys ? null : (var.api_keys.secret_name != null ? var.api_keys.secret_name : "${var.name}-api-keys")
  tls_secret  = !local.has_tls ? null : (nonsensitive(var.tls.secret_name != null) ? nonsensitive(var.tls.secret_name) : "${var.name}-tls")
  tls_serve   = local.has_tls && nonsensitive(try(var.tls.serve, false))

  security_args = concat(
    local.has_keys ? ["--api-keys=${local.keys_dir}/${var.api_keys.key}"] : [],
    local.has_tls ? ["--tls-cert=${local.tls_dir}/tls.crt", "--tls-key=${local.tls_dir}/tls.key", "--tls-ca=${local.tls_dir}/ca.crt"] : [],
    local.has_tls && nonsensitive(try(var.tls.server_name, null)) != null ? ["--tls-server-name=${nonsensitive(var.tls.server_name)}"] : [],
    local.tls_serve ? ["--serve-tls"] : [],
  )
  probe_scheme = local.tls_serve ? "HTTPS" : "HTTP"
}

resource "kubernetes_secret_v1" "api_keys" {
  count = local.has_keys && try(var.api_keys.key_file != null, false) ? 1 : 0
  metadata {
    name      = local.keys_secret
    namespace = var.namespace
    labels    = local.labels
  }
  data = {
    (var.api_keys.key) = var.api_keys.key_file
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
