# The global endpoint (<name>), the replicas' gossip addresses (<name>-gossip,
# headless: the in-cluster seed) and optionally a load balancer on the gossip
# port for cells in other clusters to join through (<name>-gossip-lb).

resource "kubernetes_service_v1" "globald" {
  metadata {
    name        = var.name
    namespace   = var.namespace
    labels      = local.labels
    annotations = var.service.annotations
  }
  spec {
    type                        = var.service.type
    selector                    = local.selector
    load_balancer_source_ranges = var.service.type == "LoadBalancer" ? var.service.load_balancer_source_ranges : null
    port {
      name         = "http"
      port         = var.ports.http
      target_port  = "http"
      protocol     = "TCP"
      app_protocol = "http"
    }
    port {
      name         = "grpc"
      port         = var.ports.grpc
      target_port  = "grpc"
      protocol     = "TCP"
      app_protocol = "grpc"
    }
  }
}

# Headless, and listing pods before they are ready: globald is ready only
# once a cell joined it, which it can only do through this Service.
resource "kubernetes_service_v1" "gossip" {
  metadata {
    name      = "${var.name}-gossip"
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    cluster_ip                  = "None"
    publish_not_ready_addresses = true
    selector                    = local.selector
    port {
      name        = "gossip-tcp"
      port        = var.ports.gossip
      target_port = "gossip-tcp"
      protocol    = "TCP"
    }
    port {
      name        = "gossip-udp"
      port        = var.ports.gossip
      target_port = "gossip-udp"
      protocol    = "UDP"
    }
  }
}

resource "kubernetes_service_v1" "gossip_lb" {
  count = var.gossip_load_balancer == null ? 0 : 1
  metadata {
    name        = "${var.name}-gossip-lb"
    namespace   = var.namespace
    labels      = local.labels
    annotations = var.gossip_load_balancer.annotations
  }
  spec {
    type                        = "LoadBalancer"
    load_balancer_ip            = var.gossip_load_balancer.ip
    load_balancer_source_ranges = var.gossip_load_balancer.load_balancer_source_ranges
    publish_not_ready_addresses = true
    selector                    = local.selector
    port {
      name        = "gossip-tcp"
      port        = var.ports.gossip
      target_port = "gossip-tcp"
      protocol    = "TCP"
    }
    port {
      name        = "gossip-udp"
      port        = var.ports.gossip
      target_port = "gossip-udp"
      protocol    = "UDP"
    }
  }
}

# globald's endpoint picker for a global gateway (var.epp).
resource "kubernetes_service_v1" "epp" {
  count = var.epp == null ? 0 : 1
  metadata {
    name      = "${var.name}-epp"
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    selector = local.selector
    port {
      name         = "epp"
      port         = var.epp.port
      target_port  = "epp"
      protocol     = "TCP"
      app_protocol = "http2"
    }
  }
}
