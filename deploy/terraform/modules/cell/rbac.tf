# What celld may read of the Kubernetes API when it discovers its pods:
# get, list and watch on Pods and InferencePools in the watched namespace,
# nothing more. Without discovery celld runs with no ServiceAccount token.

locals {
  discovery_namespace = var.discovery == null ? var.namespace : coalesce(var.discovery.namespace, var.namespace)
}

resource "kubernetes_service_account_v1" "celld" {
  count = var.discovery == null ? 0 : 1
  metadata {
    name      = var.name
    namespace = var.namespace
    labels    = local.labels
  }
  automount_service_account_token = false
}

resource "kubernetes_role_v1" "discovery" {
  count = var.discovery == null ? 0 : 1
  metadata {
    name      = "${var.name}-discovery"
    namespace = local.discovery_namespace
    labels    = local.labels
  }
  rule {
    api_groups = [""]
    resources  = ["pods"]
    verbs      = ["get", "list", "watch"]
  }
  rule {
    api_groups = ["inference.networking.k8s.io"]
    resources  = ["inferencepools"]
    verbs      = ["get", "list", "watch"]
  }
}

resource "kubernetes_role_binding_v1" "discovery" {
  count = var.discovery == null ? 0 : 1
  metadata {
    name      = "${var.name}-discovery"
    namespace = local.discovery_namespace
    labels    = local.labels
  }
  role_ref {
    api_group = "rbac.authorization.k8s.io"
    kind      = "Role"
    name      = kubernetes_role_v1.discovery[0].metadata[0].name
  }
  subject {
    kind      = "ServiceAccount"
    name      = kubernetes_service_account_v1.celld[0].metadata[0].name
    namespace = var.namespace
  }
}
