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

module "global" {
  source = "../../modules/global"

  namespace         = var.namespace
  image             = var.image
  image_pull_policy = var.image_pull_policy
  replicas          = var.global_replicas
  gossip_secret_key = var.gossip_secret_key

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
  gossip            = { seeds = [module.global.gossip_seed] }
  gossip_secret_key = var.gossip_secret_key

  depends_on = [kubernetes_namespace_v1.cellrouter]
}

locals {
  # Every cell's rendered celld configuration, by cell; CI checks each
  # with `celld --check-config` (deploy/terraform/check.sh).
  cell_configs = { for k, c in module.cell : c.cell_id => c.config_yaml }
}
