# celld as the Endpoint Picker of an InferencePool: the config's epp_addr,
# the picker's Service, the pool whose endpointPickerRef names it, the
# gateway address advertised to the global tier, and bad inputs refused
# at plan.

mock_provider "kubernetes" {}

variables {
  name      = "cell-a"
  namespace = "llm"
  image     = "registry.example.com/cellrouter:v1.2.0"
}

run "picker_of_a_new_pool" {
  command = plan
  variables {
    discovery = { inference_pool = "llama-pool" }
    gossip    = { seeds = ["10.8.0.10:7946"] }
    epp = {
      failure_mode    = "FailOpen"
      gateway_address = "10.20.0.5:80"
      inference_pool  = { name = "llama-pool", selector = { app = "vllm-llama" }, target_ports = [8000, 8001] }
    }
  }
  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).epp_addr == ":9002"
    error_message = "celld serves the picker on every interface at port 9002 (epp_addr)"
  }
  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).gossip.gateway_address == "10.20.0.5:80"
    error_message = "the pool's gateway is advertised to the global tier (gossip.gateway_address)"
  }
  assert {
    condition = (kubernetes_service_v1.epp[0].metadata[0].name == "cell-a-epp" && kubernetes_service_v1.epp[0].spec[0].port[0].port == 9002
      && kubernetes_service_v1.epp[0].spec[0].port[0].target_port == "epp" && kubernetes_service_v1.epp[0].spec[0].port[0].app_protocol == "http2"
    && kubernetes_service_v1.epp[0].spec[0].selector["app.kubernetes.io/instance"] == "cell-a")
    error_message = "the Service cell-a-epp forwards port 9002 (appProtocol http2) to celld's epp port"
  }
  assert {
    condition     = anytrue([for p in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].port : p.name == "epp" && p.container_port == 9002])
    error_message = "the celld container names its epp port"
  }
  assert {
    condition = (kubernetes_manifest.inference_pool[0].manifest.apiVersion == "inference.networking.k8s.io/v1"
      && kubernetes_manifest.inference_pool[0].manifest.kind == "InferencePool"
      && kubernetes_manifest.inference_pool[0].manifest.metadata.name == "llama-pool"
    && kubernetes_manifest.inference_pool[0].manifest.metadata.namespace == "llm")
    error_message = "an InferencePool llama-pool in the cell's namespace"
  }
  assert {
    condition = (kubernetes_manifest.inference_pool[0].manifest.spec.endpointPickerRef.name == "cell-a-epp"
      && kubernetes_manifest.inference_pool[0].manifest.spec.endpointPickerRef.kind == "Service"
      && kubernetes_manifest.inference_pool[0].manifest.spec.endpointPickerRef.port.number == 9002
    && kubernetes_manifest.inference_pool[0].manifest.spec.endpointPickerRef.failureMode == "FailOpen")
    error_message = "the pool's endpointPickerRef names the picker's Service and port, with the failure mode"
  }
  assert {
    condition = (jsonencode(kubernetes_manifest.inference_pool[0].manifest.spec.selector.matchLabels) == jsonencode({ app = "vllm-llama" })
    && jsonencode([for p in kubernetes_manifest.inference_pool[0].manifest.spec.targetPorts : p.number]) == jsonencode([8000, 8001]))
    error_message = "the pool selects the engine pods on their target ports"
  }
  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).discovery.kubernetes.inference_pool == "llama-pool"
    error_message = "celld follows the pool's pods"
  }
}

run "picker_of_an_existing_pool" {
  command = plan
  variables {
    epp = {}
  }
  assert {
    condition     = length(kubernetes_manifest.inference_pool) == 0 && length(kubernetes_service_v1.epp) == 1
    error_message = "without inference_pool: the picker's Service only, no pool"
  }
  assert {
    condition     = !contains(keys(yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"])), "gossip")
    error_message = "no gateway advertised without gossip"
  }
}

run "no_picker" {
  command = plan
  assert {
    condition = (length(kubernetes_service_v1.epp) == 0 && length(kubernetes_manifest.inference_pool) == 0
    && !contains(keys(yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"])), "epp_addr"))
    error_message = "epp = null: no epp_addr, Service or pool"
  }
}

run "bad_failure_mode" {
  command = plan
  variables {
    epp = { failure_mode = "FailSometimes" }
  }
  expect_failures = [var.epp]
}

run "gateway_without_gossip" {
  command = plan
  variables {
    epp = { gateway_address = "10.20.0.5:80" }
  }
  expect_failures = [var.epp]
}

run "bad_gateway_address" {
  command = plan
  variables {
    gossip = { seeds = ["10.8.0.10:7946"] }
    epp    = { gateway_address = "http://gw" }
  }
  expect_failures = [var.epp]
}

run "bad_pool" {
  command = plan
  variables {
    epp = { inference_pool = { name = "Pool!", selector = {} } }
  }
  expect_failures = [var.epp]
}
