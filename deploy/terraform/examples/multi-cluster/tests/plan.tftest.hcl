# Plan-time test of the example against three mocked clusters (one mock per
# provider alias): which cluster gets what, and how the cells reach the
# global tier.

mock_provider "kubernetes" {
  alias = "global"
}

mock_provider "kubernetes" {
  alias = "east"
}

mock_provider "kubernetes" {
  alias = "west"
}

variables {
  image                              = "registry.example.com/cellrouter:v0.1.0"
  contexts                           = { global = "ctx-global", east = "ctx-east", west = "ctx-west" }
  global_gossip_ip                   = "10.128.0.50"
  internal_load_balancer_annotations = { "networking.gke.io/load-balancer-type" = "Internal" }
  cell_advertise_addresses           = { east = "10.142.0.60" }
  api_keys                           = { secret_name = "cellrouter-api-keys" }
  tls                                = { global_secret_name = "globald-tls", cell_secret_name = "cell-tls" }
}

run "global_tier_and_a_cell_per_cluster" {
  command = plan

  assert {
    condition     = length(kubernetes_namespace_v1.east) == 1 && length(kubernetes_namespace_v1.west) == 1
    error_message = "the namespace is created in each of the three clusters"
  }
  assert {
    condition     = module.global.external_gossip_seed == "10.128.0.50:7946" && output.gossip_seed == "10.128.0.50:7946"
    error_message = "the cells' seed is globald's gossip load balancer at the reserved IP"
  }
  assert {
    condition     = alltrue([for id, y in local.cell_configs : yamldecode(y).gossip.seeds == ["10.128.0.50:7946"]])
    error_message = "both cells join through the gossip load balancer"
  }
  assert {
    condition     = yamldecode(local.cell_configs["cell-east"]).gossip.advertise == "10.142.0.60:7947" && module.cell_east.advertised_address == "10.142.0.60:7947"
    error_message = "the east cell advertises its reserved load-balancer IP"
  }
  assert {
    condition     = !can(yamldecode(local.cell_configs["cell-west"]).gossip.advertise) && module.cell_west.advertised_address == null
    error_message = "the west cell advertises its pod IP (celld --gossip-advertise from the downward API)"
  }
  assert {
    condition     = yamldecode(local.cell_configs["cell-west"]).discovery.kubernetes.selector == "app.kubernetes.io/name=enginesim,app.kubernetes.io/instance=cell-west" && !can(yamldecode(local.cell_configs["cell-west"]).pods)
    error_message = "each cell discovers the demo engines of its own cluster"
  }
  assert {
    condition     = yamldecode(local.cell_configs["cell-east"]).tls.cert_file == "/etc/cellrouter/tls/tls.crt" && module.global.wait_for_rollout == true
    error_message = "the cells take mutual TLS; apply waits for rollouts by default"
  }
}

run "global_and_east_share_a_cluster" {
  command = plan

  variables {
    contexts = { global = "ctx-a", east = "ctx-a", west = "ctx-b" }
  }

  assert {
    condition     = length(kubernetes_namespace_v1.east) == 0 && length(kubernetes_namespace_v1.west) == 1
    error_message = "a cluster's namespace is created once"
  }
}

run "seed_ip_must_be_an_ip" {
  command = plan
  variables {
    global_gossip_ip = "globald.example.com"
  }
  expect_failures = [var.global_gossip_ip]
}
