# The celld Deployment, its configuration and its gossip key.

locals {
  selector = {
    "app.kubernetes.io/name"     = "celld"
    "app.kubernetes.io/instance" = var.name
  }
  labels = merge(var.labels, local.selector, {
    "app.kubernetes.io/component" = "cell"
    "app.kubernetes.io/part-of"   = "cellrouter"
  })

  has_secret = nonsensitive(var.gossip_secret_key != null)
  config_dir = "/etc/cellrouter"

  # The pod IP is the advertised gossip address unless advertise_address
  # names one (then it is in the configuration): Kubernetes expands $(POD_IP)
  # from the container's environment.
  args = concat(
    ["--config=${local.config_dir}/celld.yaml", "--log-level=${var.log_level}"],
    var.gossip != null && try(var.gossip.advertise_address, null) == null ? ["--gossip-advertise=$(POD_IP):${var.gossip.port}"] : [],
    local.has_secret ? ["--gossip-secret-key=$(GOSSIP_SECRET_KEY)"] : [],
  )

  container_ports = concat(
    [
      { name = "http", port = var.ports.http, protocol = "TCP" },
      { name = "grpc", port = var.ports.grpc, protocol = "TCP" },
    ],
    var.gossip == null ? [] : [
      { name = "gossip-tcp", port = var.gossip.port, protocol = "TCP" },
      { name = "gossip-udp", port = var.gossip.port, protocol = "UDP" },
    ],
    var.zmq.bind_port == null ? [] : [{ name = "zmq", port = var.zmq.bind_port, protocol = "TCP" }],
    var.epp == null ? [] : [{ name = "epp", port = var.epp.port, protocol = "TCP" }],
  )

  scrape_annotations = {
    "prometheus.io/scrape" = "true"
    "prometheus.io/port"   = tostring(var.ports.http)
    "prometheus.io/path"   = "/metrics"
  }
}

resource "kubernetes_config_map_v1" "celld" {
  metadata {
    name      = "${var.name}-config"
    namespace = var.namespace
    labels    = local.labels
  }
  data = {
    "celld.yaml" = local.config_yaml
  }
}

resource "kubernetes_secret_v1" "gossip" {
  count = local.has_secret ? 1 : 0
  metadata {
    name      = "${var.name}-gossip-key"
    namespace = var.namespace
    labels    = local.labels
  }
  data = {
    "secret-key" = var.gossip_secret_key
  }
}

resource "kubernetes_deployment_v1" "celld" {
  metadata {
    name      = var.name
    namespace = var.namespace
    labels    = local.labels
  }
  wait_for_rollout = var.wait_for_rollout

  spec {
    replicas = var.replicas
    selector {
      match_labels = local.selector
    }
    # With replicas, a rolling update replaces them one at a time, so the
    # cell keeps an endpoint (each replica is its own gossip node). A single
    # celld is recreated: the old pod leaves before the new one starts, so
    # engines that connect to the cell never feed a pod about to go.
    strategy {
      type = var.replicas > 1 ? "RollingUpdate" : "Recreate"
      dynamic "rolling_update" {
        for_each = var.replicas > 1 ? [1] : []
        content {
          max_unavailable = "1"
          max_surge       = "0"
        }
      }
    }

    template {
      metadata {
        labels = local.labels
        annotations = merge(
          # A new configuration rolls the pod (celld reads it at start).
          { "cellrouter.dev/config-sha256" = sha256(local.config_yaml) },
          var.prometheus_scrape ? local.scrape_annotations : {},
        )
      }

      spec {
        # A token only for discovery, bound to the Role in rbac.tf.
        service_account_name             = var.discovery == null ? null : kubernetes_service_account_v1.celld[0].metadata[0].name
        automount_service_account_token  = var.discovery != null
        enable_service_links             = false
        termination_grace_period_seconds = var.termination_grace_period_seconds
        node_selector                    = var.node_selector

        security_context {
          run_as_non_root = true
          run_as_user     = 65532
          run_as_group    = 65532
          seccomp_profile {
            type = "RuntimeDefault"
          }
        }

        container {
          name              = "celld"
          image             = var.image
          image_pull_policy = var.image_pull_policy
          command           = ["/usr/local/bin/celld"]
          args              = local.args

          env {
            name = "POD_IP"
            value_from {
              field_ref {
                field_path = "status.podIP"
              }
            }
          }
          dynamic "env" {
            for_each = local.has_secret ? [1] : []
            content {
              name = "GOSSIP_SECRET_KEY"
              value_from {
                secret_key_ref {
                  name = kubernetes_secret_v1.gossip[0].metadata[0].name
                  key  = "secret-key"
                }
              }
            }
          }
          dynamic "env" {
            for_each = var.otlp_endpoint == null ? [] : [var.otlp_endpoint]
            content {
              name  = "OTEL_EXPORTER_OTLP_ENDPOINT"
              value = env.value
            }
          }
          # The namespace discovery watches when it names none.
          env {
            name = "POD_NAMESPACE"
            value_from {
              field_ref {
                field_path = "metadata.namespace"
              }
            }
          }
          # The replica id (celld replica.id defaults to $POD_NAME): its
          # gossip node name and NATS durable consumer.
          env {
            name = "POD_NAME"
            value_from {
              field_ref {
                field_path = "metadata.name"
              }
            }
          }

          dynamic "port" {
            for_each = local.container_ports
            content {
              name           = port.value.name
              container_port = port.value.port
              protocol       = port.value.protocol
            }
          }

          # Ready once every event source is connected and caught up, so the
          # Service (and globald, through gossip) only sees a warm index.
          readiness_probe {
            http_get {
              path   = "/readyz"
              port   = "http"
              scheme = local.probe_scheme
            }
            period_seconds    = 5
            timeout_seconds   = 2
            failure_threshold = 3
          }
          liveness_probe {
            http_get {
              path   = "/healthz"
              port   = "http"
              scheme = local.probe_scheme
            }
            initial_delay_seconds = 10
            period_seconds        = 10
            timeout_seconds       = 2
            failure_threshold     = 6
          }

          resources {
            requests = var.resources.requests
            limits   = var.resources.limits
          }

          security_context {
            allow_privilege_escalation = false
            read_only_root_filesystem  = true
            capabilities {
              drop = ["ALL"]
            }
          }

          volume_mount {
            name       = "config"
            mount_path = local.config_dir
            read_only  = true
          }
          volume_mount {
            name       = "tmp"
            mount_path = "/tmp"
          }
          dynamic "volume_mount" {
            for_each = local.has_keys ? [1] : []
            content {
              name       = "api-keys"
              mount_path = local.keys_dir
              read_only  = true
            }
          }
          dynamic "volume_mount" {
            for_each = local.has_tls ? [1] : []
            content {
              name       = "tls"
              mount_path = local.tls_dir
              read_only  = true
            }
          }
          dynamic "volume_mount" {
            for_each = var.snapshot == null ? [] : [1]
            content {
              name       = "snapshots"
              mount_path = local.snapshot_dir
            }
          }
        }

        volume {
          name = "config"
          config_map {
            name = kubernetes_config_map_v1.celld.metadata[0].name
          }
        }
        volume {
          name = "tmp"
          empty_dir {}
        }
        dynamic "volume" {
          for_each = local.has_keys ? [local.keys_secret] : []
          content {
            name = "api-keys"
            secret {
              secret_name  = volume.value
              default_mode = "0444" # readable by celld (uid 65532); the pod runs nothing else
            }
          }
        }
        dynamic "volume" {
          for_each = local.has_tls ? [local.tls_secret] : []
          content {
            name = "tls"
            secret {
              secret_name  = volume.value
              default_mode = "0444" # readable by celld (uid 65532); the pod runs nothing else
            }
          }
        }
        dynamic "volume" {
          for_each = var.snapshot == null ? [] : [var.snapshot.size_limit]
          content {
            name = "snapshots"
            empty_dir {
              size_limit = volume.value
            }
          }
        }
      }
    }
  }
}

resource "kubernetes_pod_disruption_budget_v1" "celld" {
  metadata {
    name      = var.name
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    max_unavailable = tostring(var.pdb_max_unavailable)
    selector {
      match_labels = local.selector
    }
  }
}
