# Three clusters through provider aliases: the global tier in one, a cell in
# each of two others. The cells join the pool through globald's gossip load
# balancer (a reserved internal IP) and advertise their pod IPs, or a
# reserved load-balancer IP of their own. See README.md.

provider "kubernetes" {
  alias          = "global"
  config_path    = var.kubeconfig
  config_context = var.contexts.global
}

provider "kubernetes" {
  alias          = "east"
  config_path    = var.kubeconfig
  config_context = var.contexts.east
}

provider "kubernetes" {
  alias          = "west"
  config_path    = var.kubeconfig
  config_context = var.contexts.west
}

resource "kubernetes_namespace_v1" "global" {
  provider = kubernetes.global
  metadata {
    name = var.namespace
  }
}

resource "kubernetes_namespace_v1" "east" {
  count    = var.contexts.east == var.contexts.global ? 0 : 1
  provider = kubernetes.east
  metadata {
    name = var.namespace
  }
}

resource "kubernetes_namespace_v1" "west" {
  count    = var.contexts.west == var.contexts.global || var.contexts.west == var.contexts.east ? 0 : 1
  provider = kubernetes.west
  metadata {
    name = var.namespace
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
  # Each cell discovers the demo engines of its own cluster through the API.
  demo_discovery = var.demo_engines == 0 ? null : { target_port = 8000, zmq_port = 8001, replay_port = 8002 }
}

module "global" {
  source    = "../../modules/global"
  providers = { kubernetes = kubernetes.global }

  namespace         = var.namespace
  image             = var.image
  replicas          = 2
  gossip_secret_key = var.gossip_secret_key
  gossip_load_balancer = {
    ip          = var.global_gossip_ip
    annotations = var.internal_load_balancer_annotations
  }
  api_keys         = local.api_keys
  tls              = local.global_tls
  wait_for_rollout = var.wait_for_rollout

  depends_on = [kubernetes_namespace_v1.global]
}

module "cell_east" {
  source    = "../../modules/cell"
  providers = { kubernetes = kubernetes.east }

  name         = "cell-east"
  namespace    = var.namespace
  image        = var.image
  demo_engines = var.demo_engines == 0 ? null : { count = var.demo_engines, model = var.demo_model }
  gossip = {
    seeds                          = [module.global.external_gossip_seed]
    advertise_address              = var.cell_advertise_addresses.east
    advertised_service_annotations = var.internal_load_balancer_annotations
  }
  gossip_secret_key = var.gossip_secret_key
  discovery         = local.demo_discovery
  api_keys          = local.api_keys
  tls               = local.cell_tls
  wait_for_rollout  = var.wait_for_rollout

  depends_on = [kubernetes_namespace_v1.east, kubernetes_namespace_v1.global]
}

module "cell_west" {
  source    = "../../modules/cell"
  providers = { kubernetes = kubernetes.west }

  name         = "cell-west"
  namespace    = var.namespace
  image        = var.image
  demo_engines = var.demo_engines == 0 ? null : { count = var.demo_engines, model = var.demo_model }
  gossip = {
    seeds                          = [module.global.external_gossip_seed]
    advertise_address              = var.cell_advertise_addresses.west
    advertised_service_annotations = var.internal_load_balancer_annotations
  }
  gossip_secret_key = var.gossip_secret_key
  discovery         = local.demo_discovery
  api_keys          = local.api_keys
  tls               = local.cell_tls
  wait_for_rollout  = var.wait_for_rollout

  depends_on = [kubernetes_namespace_v1.west, kubernetes_namespace_v1.east, kubernetes_namespace_v1.global]
}

locals {
  # Every cell's rendered celld configuration, by cell; CI checks each
  # with `celld --check-config` (deploy/terraform/check.sh).
  cell_configs = {
    (module.cell_east.cell_id) = module.cell_east.config_yaml
    (module.cell_west.cell_id) = module.cell_west.config_yaml
  }
}
