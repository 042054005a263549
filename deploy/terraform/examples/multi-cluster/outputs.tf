output "global_endpoint" {
  description = "The OpenAI-compatible endpoint, inside the global cluster."
  value       = module.global.http_endpoint
}

output "gossip_seed" {
  description = "The seed further cells (in any cluster) join: globald's gossip load balancer."
  value       = module.global.external_gossip_seed
}

output "cells" {
  description = "Each cell's cluster context, in-cluster HTTP endpoint and advertised address (null: its pod IP)."
  value = {
    (module.cell_east.cell_id) = { context = var.contexts.east, http_endpoint = module.cell_east.http_endpoint, advertised = module.cell_east.advertised_address }
    (module.cell_west.cell_id) = { context = var.contexts.west, http_endpoint = module.cell_west.http_endpoint, advertised = module.cell_west.advertised_address }
  }
}

output "cell_configs" {
  description = "Each cell's rendered celld configuration."
  value       = local.cell_configs
}

output "try_it" {
  description = "Commands that send a first request through the global tier."
  value       = <<-EOT
    kubectl --context ${var.contexts.global} -n ${var.namespace} port-forward svc/globald 8090:8090 &
    curl -s localhost:8090/v1/global/cells      # both cells, alive, with summaries
    curl -s localhost:8090/v1/completions -H 'Content-Type: application/json' \
      -d "{\"model\": \"${var.demo_model}\", \"prompt\": [$(seq -s, 1000 1063)], \"max_tokens\": 8}" \
      -D - | grep -iE 'x-cellrouter|cached_tokens'
  EOT
}
