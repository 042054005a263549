# The globald Deployment and its gossip key.

locals {
  selector = {
    "app.kubernetes.io/name"     = "globald"
    "app.kubernetes.io/instance" = var.name
  }
  labels = merge(var.labels, local.selector, {
    "app.kubernetes.io/component" = "global"
    "app.kubernetes.io/part-of"   = "cellrouter"
  })

  has_secret  = nonsensitive(var.gossip_secret_key != null)
  gossip_seed = "${var.name}-gossip.${var.namespace}.svc.${var.cluster_domain}:${var.ports.gossip}"

  # Flags in a stable order: the listeners on every interface (so that
  # kubelet probes and port-forward reach them), the pool (the pod IP
  # advertised, a name unique per pod, the replicas' own headless Service
  # plus var.seeds as seeds), then the routing flags that are set.
  routing_flags = {
    block_size      = "--block-size"
    max_probes      = "--max-probes"
    probe_slack     = "--probe-slack"
    cold_blocks     = "--cold-blocks"
    probe_timeout   = "--probe-timeout"
    prefill_weight  = "--prefill-weight"
    rtt_weight      = "--rtt-weight"
    max_attempts    = "--max-attempts"
    request_timeout = "--request-timeout"
    move_weight     = "--move-weight"
    probe_cold      = "--probe-cold"
    pressure_weight = "--pressure-weight"
    full_at         = "--full-at"
    avoid_busy      = "--avoid-busy"
  }
  args = concat(
    [
      "--http-addr=:${var.ports.http}",
      "--grpc-addr=:${var.ports.grpc}",
      "--gossip-bind=:${var.ports.gossip}",
      "--gossip-advertise=$(POD_IP):${var.ports.gossip}",
      "--gossip-name=global/$(POD_NAME)",
      "--log-level=${var.log_level}",
    ],
    [for s in concat([local.gossip_seed], var.seeds) : "--seed=${s}"],
    local.has_secret ? ["--gossip-secret-key=$(GOSSIP_SECRET_KEY)"] : [],
    [for k in sort(keys(local.routing_flags)) : "${local.routing_flags[k]}=${var.routing[k]}" if var.routing[k] != null],
    local.security_args,
    var.epp == null ? [] : ["--epp-addr=:${var.epp.port}"],
  )

  scrape_annotations = {
    "prometheus.io/scrape" = "true"
    "prometheus.io/port"   = tostring(var.ports.http)
    "prometheus.io/path"   = "/metrics"
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

resource "kubernetes_deployment_v1" "globald" {
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
    strategy {
      type = "RollingUpdate"
      rolling_update {
        max_unavailable = "0"
        max_surge       = "1"
      }
    }

    template {
      metadata {
        labels      = local.labels
        annotations = var.prometheus_scrape ? local.scrape_annotations : {}
      }

      spec {
        automount_service_account_token  = false
        enable_service_links             = false
        termination_grace_period_seconds = var.termination_grace_period_seconds
        node_selector                    = var.node_selector

        # Replicas on different nodes where the scheduler can.
        affinity {
          pod_anti_affinity {
            preferred_during_scheduling_ignored_during_execution {
              weight = 100
              pod_affinity_term {
                topology_key = "kubernetes.io/hostname"
                label_selector {
                  match_labels = local.selector
                }
              }
            }
          }
        }

        security_context {
          run_as_non_root = true
          run_as_user     = 65532
          run_as_group    = 65532
          seccomp_profile {
            type = "RuntimeDefault"
          }
        }

        container {
          name              = "globald"
          image             = var.image
          image_pull_policy = var.image_pull_policy
          command           = ["/usr/local/bin/globald"]
          args              = local.args

          env {
            name = "POD_IP"
            value_from {
              field_ref {
                field_path = "status.podIP"
              }
            }
          }
          env {
            name = "POD_NAME"
            value_from {
              field_ref {
                field_path = "metadata.name"
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

          dynamic "port" {
            for_each = concat([
              { name = "http", port = var.ports.http, protocol = "TCP" },
              { name = "grpc", port = var.ports.grpc, protocol = "TCP" },
              { name = "gossip-tcp", port = var.ports.gossip, protocol = "TCP" },
              { name = "gossip-udp", port = var.ports.gossip, protocol = "UDP" },
            ], var.epp == null ? [] : [{ name = "epp", port = var.epp.port, protocol = "TCP" }])
            content {
              name           = port.value.name
              container_port = port.value.port
              protocol       = port.value.protocol
            }
          }

          # Ready once it knows a usable cell: until then the Service sends
          # no request to a replica that could only refuse it.
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
              default_mode = "0444" # readable by globald (uid 65532); the pod runs nothing else
            }
          }
        }
        dynamic "volume" {
          for_each = local.has_tls ? [local.tls_secret] : []
          content {
            name = "tls"
            secret {
              secret_name  = volume.value
              default_mode = "0444"
            }
          }
        }
      }
    }
  }
}

resource "kubernetes_pod_disruption_budget_v1" "globald" {
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
