# The cell's Services: the data plane and control plane (<name>), the
# gossip port's stable DNS name (<name>-gossip) and, for a cell that
# advertises a load-balancer address to other clusters, that load balancer
# (<name>-advertised).

resource "kubernetes_service_v1" "celld" {
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
    dynamic "port" {
      for_each = var.zmq.bind_port == null ? [] : [var.zmq.bind_port]
      content {
        name        = "zmq"
        port        = port.value
        target_port = "zmq"
        protocol    = "TCP"
      }
    }
  }
}

# Headless, and listing pods before they are ready: a member must be
# reachable for gossip while it is still catching up.
resource "kubernetes_service_v1" "gossip" {
  count = var.gossip == null ? 0 : 1
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
      port        = var.gossip.port
      target_port = "gossip-tcp"
      protocol    = "TCP"
    }
    port {
      name        = "gossip-udp"
      port        = var.gossip.port
      target_port = "gossip-udp"
      protocol    = "UDP"
    }
  }
}

# The address the pool is told when pod IPs are not routed between the
# clusters: memberlist needs TCP and UDP on the gossip port, and globald
# dials the cell's HTTP and gRPC ports at the same host.
resource "kubernetes_service_v1" "advertised" {
  count = var.gossip != null && try(var.gossip.advertise_address, null) != null ? 1 : 0
  metadata {
    name        = "${var.name}-advertised"
    namespace   = var.namespace
    labels      = local.labels
    annotations = var.gossip.advertised_service_annotations
  }
  spec {
    type                        = "LoadBalancer"
    load_balancer_ip            = var.gossip.advertise_address
    load_balancer_source_ranges = var.gossip.advertised_load_balancer_source_ranges
    external_traffic_policy     = "Local"
    publish_not_ready_addresses = true
    selector                    = local.selector
    dynamic "port" {
      for_each = [
        { name = "http", port = var.ports.http, protocol = "TCP" },
        { name = "grpc", port = var.ports.grpc, protocol = "TCP" },
        { name = "gossip-tcp", port = var.gossip.port, protocol = "TCP" },
        { name = "gossip-udp", port = var.gossip.port, protocol = "UDP" },
      ]
      content {
        name        = port.value.name
        port        = port.value.port
        target_port = port.value.name
        protocol    = port.value.protocol
      }
    }
  }
}
