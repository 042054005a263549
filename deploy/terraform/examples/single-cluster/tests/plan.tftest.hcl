# Plan-time test of the example against a mocked Kubernetes provider: the
# global tier and the cells are wired into one pool.

mock_provider "kubernetes" {}

variables {
  image = "localhost/cellrouter:dev"
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
      yamldecode(y).gossip.seeds == ["globald-gossip.cellrouter.svc.cluster.local:7946"] && length(yamldecode(y).pods) == 2
    ])
    error_message = "every cell joins globald's gossip Service and dials its two demo engines"
  }
  assert {
    condition     = yamldecode(local.cell_configs["cell-b"]).pods[1].zmq_endpoint == "tcp://cell-b-engine-1.cell-b-engine.cellrouter.svc.cluster.local:8001"
    error_message = "cell-b dials its own engines"
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
}

run "a_cell_without_pods" {
  command = plan
  variables {
    cells = { "cell-empty" = { demo_engines = 0 } }
  }
  expect_failures = [var.cells]
}
