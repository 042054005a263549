output "global_endpoint" {
  description = "The OpenAI-compatible endpoint clients use, inside the cluster."
  value       = module.global.http_endpoint
}

output "cell_endpoints" {
  description = "Each cell's own HTTP endpoint (state: /v1/cell/state, dry runs: POST /v1/cell/route)."
  value       = { for k, c in module.cell : k => c.http_endpoint }
}

output "cell_configs" {
  description = "Each cell's rendered celld configuration."
  value       = local.cell_configs
}

output "try_it" {
  description = "Commands that send a first request through the global tier."
  value       = <<-EOT
    kubectl -n ${var.namespace} port-forward svc/globald 8090:8090 &
    curl -s localhost:8090/v1/global/cells
    curl -s localhost:8090/v1/completions -H 'Content-Type: application/json' \
      -d "{\"model\": \"${var.demo_model}\", \"prompt\": [$(seq -s, 1000 1063)], \"max_tokens\": 8}" \
      -D - | grep -iE 'x-cellrouter|cached_tokens'
  EOT
}
