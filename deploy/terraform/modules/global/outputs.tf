output "http_endpoint" {
  description = "The global endpoint inside the cluster: OpenAI API (/v1/completions, /v1/chat/completions, /v1/models), REST control plane (/v1/global/...), /metrics, /healthz, /readyz."
  value       = "http://${var.name}.${var.namespace}.svc.${var.cluster_domain}:${var.ports.http}"
}

output "grpc_endpoint" {
  description = "The global tier's gRPC endpoint inside the cluster (host:port): GlobalService."
  value       = "${var.name}.${var.namespace}.svc.${var.cluster_domain}:${var.ports.grpc}"
}

output "gossip_seed" {
  description = "The seed cells in this cluster join (host:port of the replicas' headless gossip Service): the cell module's gossip.seeds."
  value       = local.gossip_seed
}

output "external_gossip_seed" {
  description = "The seed cells in other clusters join (IP:port of <name>-gossip-lb): the reserved gossip_load_balancer.ip, known at plan time, else the address the cloud assigned (known after apply); null without gossip_load_balancer."
  value = var.gossip_load_balancer == null ? null : (
    var.gossip_load_balancer.ip != null ? "${var.gossip_load_balancer.ip}:${var.ports.gossip}" :
    "${coalesce(kubernetes_service_v1.gossip_lb[0].status[0].load_balancer[0].ingress[0].ip, kubernetes_service_v1.gossip_lb[0].status[0].load_balancer[0].ingress[0].hostname)}:${var.ports.gossip}"
  )
}

output "load_balancer_ingress" {
  description = "The global endpoint's load-balancer address (IP or hostname) when service.type is LoadBalancer, else null."
  value       = var.service.type == "LoadBalancer" ? try(coalesce(kubernetes_service_v1.globald.status[0].load_balancer[0].ingress[0].ip, kubernetes_service_v1.globald.status[0].load_balancer[0].ingress[0].hostname), null) : null
}

output "selector" {
  description = "The labels that select the globald pods (kubectl get pods -l ...)."
  value       = local.selector
}

output "wait_for_rollout" {
  description = "Whether apply waits for the rollout (the variable, passed through for callers' checks)."
  value       = var.wait_for_rollout
}
