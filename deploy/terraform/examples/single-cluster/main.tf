# One cluster: the global tier (globald replicas) and cells with simulated
# engines, joined in one gossip pool through globald's headless gossip
# Service. See README.md.

provider "kubernetes" {
  config_path    = var.kubeconfig
  config_context = var.kube_context
}

resource "kubernetes_namespace_v1" "cellrouter" {
  count = var.create_namespace ? 1 : 0
  metadata {
    name   = var.namespace
    labels = { "app.kubernetes.io/part-of" = "cellrouter" }
  }
}

locals {
  # Secure by default: one key file for both tiers, and mutual TLS between
  # them, from PEMs (Secrets created here) or existing Secrets.
  api_keys = var.api_keys.secret_name != null ? { secret_name = var.api_keys.secret_name } : { key_file = var.api_keys.key_file }
  global_tls = var.tls.global_secret_name != null ? { secret_name = var.tls.global_secret_name, server_name = var.tls.server_name } : {
    cert_pem = var.tls.global.cert_pem, key_pem = var.tls.global.key_pem, ca_pem = var.tls.ca_pem, server_name = var.tls.server_name
  }
  cell_tls = var.tls.cell_secret_name != null ? { secret_name = var.tls.cell_secret_name } : {
    cert_pem = var.tls.cell.cert_pem, key_pem = var.tls.cell.key_pem, ca_pem = var.tls.ca_pem
  }
}

module "global" {
  source = "../../modules/global"

  namespace         = var.namespace
  image             = var.image
  image_pull_policy = var.image_pull_policy
  replicas          = var.global_replicas
  gossip_secret_key = var.gossip_secret_key
  api_keys          = local.api_keys
  tls               = local.global_tls
  wait_for_rollout  = var.wait_for_rollout

  depends_on = [kubernetes_namespace_v1.cellrouter]
}

module "cell" {
  source   = "../../modules/cell"
  for_each = var.cells

  name              = each.key
  namespace         = var.namespace
  image             = var.image
  image_pull_policy = var.image_pull_policy
  pods              = each.value.pods
  demo_engines      = each.value.demo_engines == 0 ? null : { count = each.value.demo_engines, model = var.demo_model }
  # The cell follows its engines through the Kubernetes API: the demo
  # engines (their ZMQ ports 8001 and 8002), or what cells[].discovery names.
  discovery = each.value.discovery != null ? each.value.discovery : (
    each.value.demo_engines == 0 ? null : { target_port = 8000, zmq_port = 8001, replay_port = 8002 }
  )
  gossip            = { seeds = [module.global.gossip_seed] }
  gossip_secret_key = var.gossip_secret_key
  api_keys          = local.api_keys
  tls               = local.cell_tls
  wait_for_rollout  = var.wait_for_rollout

  depends_on = [kubernetes_namespace_v1.cellrouter]
}

locals {
  # Every cell's rendered celld configuration, by cell; CI checks each
  # with `celld --check-config` (deploy/terraform/check.sh).
  cell_configs = { for k, c in module.cell : c.cell_id => c.config_yaml }
}
