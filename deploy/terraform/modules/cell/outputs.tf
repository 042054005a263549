output "cell_id" {
  description = "The cell's id in the pool, metrics and traces."
  value       = local.cell_id
}

output "config_yaml" {
  description = "The celld configuration the module renders into the ConfigMap (<name>-config, key celld.yaml); `celld --check-config` accepts it."
  value       = local.config_yaml
}

output "http_endpoint" {
  description = "The cell's HTTP endpoint inside the cluster: OpenAI API (/v1/completions, /v1/chat/completions, /v1/models), REST control plane (/v1/cell/...), /metrics, /healthz, /readyz."
  value       = "http://${var.name}.${var.namespace}.svc.${var.cluster_domain}:${var.ports.http}"
}

output "grpc_endpoint" {
  description = "The cell's gRPC endpoint inside the cluster (host:port): CellService and EventPublisher."
  value       = "${var.name}.${var.namespace}.svc.${var.cluster_domain}:${var.ports.grpc}"
}

output "zmq_endpoint" {
  description = "Where engines connect their KV-event publisher when zmq.bind_port is set (tcp://host:port), else null."
  value       = var.zmq.bind_port == null ? null : "tcp://${var.name}.${var.namespace}.svc.${var.cluster_domain}:${var.zmq.bind_port}"
}

output "gossip_address" {
  description = "The cell's gossip address inside the cluster (host:port of its headless Service), a seed for other members; null for a standalone cell."
  value       = var.gossip == null ? null : "${var.name}-gossip.${var.namespace}.svc.${var.cluster_domain}:${var.gossip.port}"
}

output "advertised_address" {
  description = "The address the cell advertises to the pool when gossip.advertise_address is set (IP:port, served by the <name>-advertised load balancer), else null (the pod IP is advertised)."
  value       = try(var.gossip.advertise_address, null) == null ? null : "${var.gossip.advertise_address}:${var.gossip.port}"
}

output "pods" {
  description = "The pods the cell is configured with (ids and addresses), the demo engines included."
  value       = [for p in local.pods : { id = p.id, address = p.address }]
}

output "selector" {
  description = "The labels that select the celld pods (kubectl get pods -l ...)."
  value       = local.selector
}

output "discovery_rbac" {
  description = "What discovery reads the API as: the ServiceAccount, Role and RoleBinding (namespace/name each); empty without discovery."
  value = var.discovery == null ? [] : [
    "serviceaccount/${var.namespace}/${var.name}",
    "role/${local.discovery_namespace}/${var.name}-discovery",
    "rolebinding/${local.discovery_namespace}/${var.name}-discovery",
  ]
}

output "wait_for_rollout" {
  description = "Whether apply waits for the rollouts (the variable, passed through for callers' checks)."
  value       = var.wait_for_rollout
}
