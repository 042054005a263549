# The demo's simulated engines: loadtest enginesim, one simulated vLLM pod
# per pod of a StatefulSet, so each has a stable DNS name the cell's
# configuration can list (<name>-engine-<i>.<name>-engine.<namespace>.svc).
# Each serves the OpenAI API and /health on 8000 and publishes KV events on
# 8001 with its replay socket on 8002, as vLLM does.

locals {
  engine_selector = {
    "app.kubernetes.io/name"     = "enginesim"
    "app.kubernetes.io/instance" = var.name
  }
  engine_labels = merge(var.labels, local.engine_selector, {
    "app.kubernetes.io/component" = "demo-engine"
    "app.kubernetes.io/part-of"   = "cellrouter"
  })
}

resource "kubernetes_service_v1" "engine" {
  count = var.demo_engines == null ? 0 : 1
  metadata {
    name      = local.engine_service
    namespace = var.namespace
    labels    = local.engine_labels
  }
  spec {
    cluster_ip                  = "None"
    publish_not_ready_addresses = true
    selector                    = local.engine_selector
    dynamic "port" {
      for_each = local.engine_ports
      content {
        name        = port.key
        port        = port.value
        target_port = port.key
        protocol    = "TCP"
      }
    }
  }
}

resource "kubernetes_stateful_set_v1" "engine" {
  count = var.demo_engines == null ? 0 : 1
  metadata {
    name      = local.engine_service
    namespace = var.namespace
    labels    = local.engine_labels
  }
  wait_for_rollout = var.wait_for_rollout

  spec {
    service_name          = kubernetes_service_v1.engine[0].metadata[0].name
    replicas              = var.demo_engines.count
    pod_management_policy = "Parallel"
    selector {
      match_labels = local.engine_selector
    }

    template {
      metadata {
        labels = local.engine_labels
        annotations = merge(
          # What a discovering cell reads of the pod (cell/discovery).
          { "cellrouter.io/model" = var.demo_engines.model, "cellrouter.io/kv-blocks" = tostring(var.demo_engines.blocks) },
          var.prometheus_scrape ? {
            "prometheus.io/scrape" = "true"
            "prometheus.io/port"   = tostring(local.engine_ports.http)
            "prometheus.io/path"   = "/metrics"
        } : {})
      }

      spec {
        automount_service_account_token = false
        enable_service_links            = false
        node_selector                   = var.node_selector

        security_context {
          run_as_non_root = true
          run_as_user     = 65532
          run_as_group    = 65532
          seccomp_profile {
            type = "RuntimeDefault"
          }
        }

        container {
          name              = "enginesim"
          image             = var.image
          image_pull_policy = var.image_pull_policy
          command           = ["/usr/local/bin/loadtest"]
          args = [
            "enginesim", "--pods=1", "--host=0.0.0.0", "--base-port=${local.engine_ports.http}",
            "--model=${var.demo_engines.model}", "--block-size=${local.engine_block}",
            "--blocks=${var.demo_engines.blocks}", "--time-scale=${var.demo_engines.time_scale}",
          ]

          dynamic "port" {
            for_each = local.engine_ports
            content {
              name           = port.key
              container_port = port.value
              protocol       = "TCP"
            }
          }

          readiness_probe {
            http_get {
              path = "/health"
              port = "http"
            }
            period_seconds = 5
          }
          liveness_probe {
            http_get {
              path = "/health"
              port = "http"
            }
            initial_delay_seconds = 5
            period_seconds        = 10
          }

          resources {
            requests = var.demo_engines.resources.requests
            limits   = var.demo_engines.resources.limits
          }

          security_context {
            allow_privilege_escalation = false
            read_only_root_filesystem  = true
            capabilities {
              drop = ["ALL"]
            }
          }
        }
      }
    }
  }
}
