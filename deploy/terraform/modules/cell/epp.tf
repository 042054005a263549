# celld as the Endpoint Picker (EPP) of an InferencePool: its ext_proc
# server (celld epp_addr) behind a Service (<name>-epp) that the pool's
# endpointPickerRef names, so that a Gateway API implementation routing to
# the pool asks the cell which pod takes each request, and carries the
# request there itself.

locals {
  epp_service = "${var.name}-epp"
  # The pool celld discovers its pods from when the module creates it and
  # discovery names no other (see variable "epp").
  epp_pool = var.epp == null ? null : try(var.epp.inference_pool.name, null)
}

resource "kubernetes_service_v1" "epp" {
  count = var.epp == null ? 0 : 1
  metadata {
    name      = local.epp_service
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    type     = "ClusterIP"
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

# The InferencePool (inference.networking.k8s.io/v1, Gateway API Inference
# Extension v1.x) whose picker is this cell. Its CRD must be installed.
resource "kubernetes_manifest" "inference_pool" {
  count = local.epp_pool == null ? 0 : 1
  manifest = {
    apiVersion = "inference.networking.k8s.io/v1"
    kind       = "InferencePool"
    metadata = {
      name      = local.epp_pool
      namespace = var.namespace
      labels    = local.labels
    }
    spec = merge(
      {
        selector    = { matchLabels = var.epp.inference_pool.selector }
        targetPorts = [for p in var.epp.inference_pool.target_ports : { number = p }]
        endpointPickerRef = {
          kind        = "Service"
          name        = local.epp_service
          port        = { number = var.epp.port }
          failureMode = var.epp.failure_mode
        }
      },
      var.epp.inference_pool.app_protocol == null ? {} : { appProtocol = var.epp.inference_pool.app_protocol },
    )
  }
}
