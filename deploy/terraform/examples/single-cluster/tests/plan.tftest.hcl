# Plan-time test of the example against a mocked Kubernetes provider: the
# global tier and the cells are wired into one pool.

mock_provider "kubernetes" {}

variables {
  image    = "localhost/cellrouter:dev"
  api_keys = { key_file = "tenants: []\nkeys: []\n" }
  tls = {
    ca_pem = "CA"
    global = { cert_pem = "GLOBAL CERT", key_pem = "GLOBAL KEY" }
    cell   = { cert_pem = "CELL CERT", key_pem = "CELL KEY" }
  }
}

run "two_cells_and_the_global_tier" {
  command = plan

  assert {
    condition     = kubernetes_namespace_v1.cellrouter[0].metadata[0].name == "cellrouter"
    error_message = "the namespace is created"
  }
  assert {
    condition     = keys(module.cell) == ["cell-a", "cell-b"] && keys(local.cell_configs) == ["cell-a", "cell-b"]
    error_message = "two cells, each with a rendered configuration"
  }
  assert {
    condition = alltrue([for k, y in local.cell_configs :
      yamldecode(y).gossip.seeds == ["globald-gossip.cellrouter.svc.cluster.local:7946"] && !contains(keys(yamldecode(y)), "pods")
    ])
    error_message = "every cell joins globald's gossip Service, and lists no static pod"
  }
  assert {
    condition = yamldecode(local.cell_configs["cell-b"]).discovery.kubernetes == {
      enabled     = true, kubeconfig = "", selector = "app.kubernetes.io/name=enginesim,app.kubernetes.io/instance=cell-b",
      target_port = 8000, zmq_port = 8001, replay_port = 8002
    }
    error_message = "cell-b discovers its own demo engines through the API, on their ports"
  }
  assert {
    condition = alltrue([for k, y in local.cell_configs :
      yamldecode(y).auth.key_file == "/etc/cellrouter/keys/api-keys.yaml" && yamldecode(y).tls.ca_file == "/etc/cellrouter/tls/ca.crt"
    ])
    error_message = "every cell takes API keys and mutual TLS"
  }
  assert {
    condition     = length(module.cell["cell-a"].discovery_rbac) == 3
    error_message = "each cell gets its ServiceAccount, Role and RoleBinding"
  }
  assert {
    condition     = output.global_endpoint == "http://globald.cellrouter.svc.cluster.local:8090"
    error_message = "the global endpoint is an output"
  }
}

run "existing_namespace_and_real_pods" {
  command = plan

  variables {
    create_namespace = false
    namespace        = "inference"
    cells = {
      "cell-gpu" = {
        demo_engines = 0
        pods         = [{ id = "vllm-0", address = "10.0.3.4:8000", model = "llama-3.1-8b", zmq_endpoint = "tcp://10.0.3.4:5557" }]
      }
    }
  }

  assert {
    condition     = length(kubernetes_namespace_v1.cellrouter) == 0
    error_message = "no namespace is created when it exists"
  }
  assert {
    condition     = yamldecode(local.cell_configs["cell-gpu"]).pods == [{ id = "vllm-0", address = "10.0.3.4:8000", role = "both", model = "llama-3.1-8b", zmq_endpoint = "tcp://10.0.3.4:5557" }]
    error_message = "a cell of real engines lists them and no demo engine"
  }
  assert {
    condition     = !contains(keys(yamldecode(local.cell_configs["cell-gpu"])), "discovery")
    error_message = "a cell of static pods only discovers nothing"
  }
}

run "a_cell_without_pods" {
  command = plan
  variables {
    cells = { "cell-empty" = { demo_engines = 0 } }
  }
  expect_failures = [var.cells]
}

run "a_cell_following_an_inference_pool" {
  command = plan
  variables {
    cells = { "cell-pool" = { demo_engines = 0, discovery = { inference_pool = "llama", namespace = "engines" } } }
  }
  assert {
    condition     = yamldecode(local.cell_configs["cell-pool"]).discovery.kubernetes.inference_pool == "llama" && yamldecode(local.cell_configs["cell-pool"]).discovery.kubernetes.namespace == "engines"
    error_message = "a cell may follow an InferencePool in another namespace"
  }
}

run "wait_for_rollout_passes_through" {
  command = plan
  variables {
    wait_for_rollout = false
  }
  assert {
    condition     = module.global.wait_for_rollout == false && alltrue([for c in module.cell : c.wait_for_rollout == false])
    error_message = "wait_for_rollout reaches globald and every cell"
  }
}
