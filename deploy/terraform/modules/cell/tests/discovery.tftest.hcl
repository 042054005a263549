# The cell following its pods through the Kubernetes API (discovery), its
# RBAC, and its API keys and tier certificate from Secrets mounted as
# directories: plan-time assertions and validation of bad inputs.

mock_provider "kubernetes" {}

variables {
  name  = "cell-a"
  image = "registry.example.com/cellrouter:v1.2.0"
}

run "discovery_by_selector" {
  command = plan
  variables {
    namespace = "llm"
    discovery = { selector = "app=vllm", zmq_port = 5557, replay_port = 0 }
  }
  assert {
    condition = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).discovery.kubernetes == {
      enabled = true, kubeconfig = "", selector = "app=vllm", target_port = 8000, zmq_port = 5557, replay_port = 0
    }
    error_message = "the config's discovery.kubernetes: enabled, in-cluster, the selector and the ports (namespace left to POD_NAMESPACE)"
  }
  assert {
    condition     = !contains(keys(yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"])), "pods")
    error_message = "no static pods"
  }
  assert {
    condition     = kubernetes_service_account_v1.celld[0].metadata[0].name == "cell-a" && kubernetes_service_account_v1.celld[0].metadata[0].namespace == "llm"
    error_message = "a ServiceAccount named after the cell, in its namespace"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].service_account_name == "cell-a"
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].automount_service_account_token == true)
    error_message = "celld runs as the ServiceAccount, with its token mounted"
  }
  assert {
    condition     = [for r in kubernetes_role_v1.discovery[0].rule : "${join(",", r.api_groups)}|${join(",", r.resources)}|${join(",", r.verbs)}"] == ["|pods|get,list,watch", "inference.networking.k8s.io|inferencepools|get,list,watch"]
    error_message = "the Role allows get, list and watch on pods and inferencepools, nothing more"
  }
  assert {
    condition = (kubernetes_role_binding_v1.discovery[0].metadata[0].namespace == "llm"
      && kubernetes_role_binding_v1.discovery[0].role_ref[0].name == "cell-a-discovery"
      && kubernetes_role_binding_v1.discovery[0].subject[0].name == "cell-a"
    && kubernetes_role_binding_v1.discovery[0].subject[0].namespace == "llm")
    error_message = "the RoleBinding gives the Role to the ServiceAccount"
  }
  assert {
    condition = anytrue([for e in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].env :
    e.name == "POD_NAMESPACE" && e.value_from[0].field_ref[0].field_path == "metadata.namespace"])
    error_message = "POD_NAMESPACE comes from the pod's namespace"
  }
}

run "discovery_of_a_pool_in_another_namespace" {
  command = plan
  variables {
    discovery = { inference_pool = "llama-pool", namespace = "engines" }
  }
  assert {
    condition = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).discovery.kubernetes == {
      enabled = true, kubeconfig = "", namespace = "engines", inference_pool = "llama-pool", zmq_port = 5557, replay_port = 5558
    }
    error_message = "a pool's ports come from the pool: no target_port"
  }
  assert {
    condition     = kubernetes_role_v1.discovery[0].metadata[0].namespace == "engines" && kubernetes_role_binding_v1.discovery[0].subject[0].namespace == "default"
    error_message = "the Role lives where the pods are, bound to the ServiceAccount in the cell's namespace"
  }
}

run "discovery_of_the_demo_engines" {
  command = plan
  variables {
    demo_engines = { count = 3 }
    discovery    = { zmq_port = 8001, replay_port = 8002 }
    pods         = [{ id = "static-0", address = "10.0.0.7:8000" }]
  }
  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).discovery.kubernetes.selector == "app.kubernetes.io/name=enginesim,app.kubernetes.io/instance=cell-a"
    error_message = "without a selector or pool, the demo engines' labels select"
  }
  assert {
    condition     = [for p in yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).pods : p.id] == ["static-0"]
    error_message = "static pods combine with discovery; the demo engines are discovered, not listed"
  }
}

run "no_discovery_no_rbac" {
  command = plan
  variables {
    pods = [{ id = "pod-0", address = "10.0.0.7:8000" }]
  }
  assert {
    condition = (length(kubernetes_service_account_v1.celld) == 0 && length(kubernetes_role_v1.discovery) == 0 && length(kubernetes_role_binding_v1.discovery) == 0
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].automount_service_account_token == false)
    error_message = "without discovery: no ServiceAccount, Role or binding, and no token"
  }
}

run "secure_with_created_secrets" {
  command = plan
  variables {
    pods     = [{ id = "pod-0", address = "10.0.0.7:8000" }]
    api_keys = { key_file = "tenants: []\nkeys: []\n" }
    tls      = { cert_pem = "CERT", key_pem = "KEY", ca_pem = "CA" }
  }
  assert {
    condition = (yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).auth == { key_file = "/etc/cellrouter/keys/api-keys.yaml" }
      && yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).tls == {
        cert_file = "/etc/cellrouter/tls/tls.crt", key_file = "/etc/cellrouter/tls/tls.key", ca_file = "/etc/cellrouter/tls/ca.crt", client_auth = "verify_if_given"
    })
    error_message = "the config reads the key file and the certificate from the mounted directories"
  }
  assert {
    condition     = kubernetes_secret_v1.api_keys[0].metadata[0].name == "cell-a-api-keys" && kubernetes_secret_v1.tls[0].metadata[0].name == "cell-a-tls" && kubernetes_secret_v1.tls[0].type == "kubernetes.io/tls"
    error_message = "the module creates the key file's Secret and a kubernetes.io/tls Secret"
  }
  assert {
    condition = length([for m in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].volume_mount : m
      if contains(["api-keys", "tls"], m.name) && m.read_only == true && (m.sub_path == null || m.sub_path == "") && contains(["/etc/cellrouter/keys", "/etc/cellrouter/tls"], m.mount_path)
    ]) == 2
    error_message = "both Secrets are mounted read-only as directories (no subPath: a rotation reaches the files)"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].readiness_probe[0].http_get[0].scheme == "HTTPS"
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].liveness_probe[0].http_get[0].scheme == "HTTPS")
    error_message = "with TLS the probes speak HTTPS"
  }
}

run "secure_with_existing_secrets" {
  command = plan
  variables {
    pods     = [{ id = "pod-0", address = "10.0.0.7:8000" }]
    api_keys = { secret_name = "fleet-keys", key = "keys.yaml" }
    tls      = { secret_name = "cell-a-cert" }
  }
  assert {
    condition     = length(kubernetes_secret_v1.api_keys) == 0 && length(kubernetes_secret_v1.tls) == 0
    error_message = "existing Secrets are referenced, not created"
  }
  assert {
    condition = ([for v in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].volume : v.secret[0].secret_name if length(v.secret) > 0] == ["fleet-keys", "cell-a-cert"]
    && yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).auth.key_file == "/etc/cellrouter/keys/keys.yaml")
    error_message = "the volumes name the existing Secrets, and the key file is read under its key"
  }
}

run "discovery_selector_and_pool" {
  command = plan
  variables {
    discovery = { selector = "app=vllm", inference_pool = "pool" }
  }
  expect_failures = [var.discovery]
}

run "discovery_without_a_source" {
  command = plan
  variables {
    discovery = {}
  }
  expect_failures = [var.discovery]
}

run "discovery_bad_port" {
  command = plan
  variables {
    discovery = { selector = "app=vllm", target_port = 0 }
  }
  expect_failures = [var.discovery]
}

run "discovery_bad_namespace" {
  command = plan
  variables {
    discovery = { selector = "app=vllm", namespace = "Engines" }
  }
  expect_failures = [var.discovery]
}

run "api_keys_both_sources" {
  command = plan
  variables {
    api_keys = { key_file = "keys: []", secret_name = "x" }
  }
  expect_failures = [var.api_keys]
}

run "tls_partial" {
  command = plan
  variables {
    api_keys = { secret_name = "keys" }
    tls      = { cert_pem = "CERT", key_pem = "KEY" }
  }
  expect_failures = [var.tls]
}

run "tls_without_keys" {
  command = plan
  variables {
    tls = { secret_name = "cert" }
  }
  expect_failures = [var.tls]
}
