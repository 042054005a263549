# Plan-time tests of the global module against a mocked Kubernetes provider.

mock_provider "kubernetes" {}

variables {
  image = "registry.example.com/cellrouter:v1.2.0"
}

run "defaults" {
  command = plan

  assert {
    condition = (kubernetes_deployment_v1.globald.metadata[0].name == "globald"
      && kubernetes_deployment_v1.globald.spec[0].replicas == "2"
    && kubernetes_deployment_v1.globald.spec[0].template[0].metadata[0].labels["app.kubernetes.io/name"] == "globald")
    error_message = "two globald replicas, labelled"
  }
  assert {
    condition = kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args == tolist([
      "--http-addr=:8090", "--grpc-addr=:8091", "--gossip-bind=:7946", "--gossip-advertise=$(POD_IP):7946",
      "--gossip-name=global/$(POD_NAME)", "--log-level=info", "--seed=globald-gossip.default.svc.cluster.local:7946",
    ])
    error_message = "every interface, the pod IP advertised, a name per pod, the replicas' headless Service as seed"
  }
  assert {
    condition = ([for e in kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].env : "${e.name}=${e.value_from[0].field_ref[0].field_path}"]
    == ["POD_IP=status.podIP", "POD_NAME=metadata.name"])
    error_message = "POD_IP and POD_NAME come from the downward API"
  }
  assert {
    condition = (kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].readiness_probe[0].http_get[0].path == "/readyz"
    && kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].liveness_probe[0].http_get[0].path == "/healthz")
    error_message = "readiness on /readyz, liveness on /healthz"
  }
  assert {
    condition = ([for p in kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].port : "${p.name}/${p.container_port}/${p.protocol}"]
    == ["http/8090/TCP", "grpc/8091/TCP", "gossip-tcp/7946/TCP", "gossip-udp/7946/UDP"])
    error_message = "container ports"
  }
  assert {
    condition     = kubernetes_deployment_v1.globald.spec[0].template[0].metadata[0].annotations["prometheus.io/port"] == "8090"
    error_message = "Prometheus scrapes the http port"
  }
  assert {
    condition     = kubernetes_deployment_v1.globald.spec[0].strategy[0].rolling_update[0].max_unavailable == "0"
    error_message = "a rollout keeps every replica serving until its successor is up"
  }
  assert {
    condition = ([for p in kubernetes_service_v1.globald.spec[0].port : "${p.name}/${p.port}"] == ["http/8090", "grpc/8091"]
    && kubernetes_service_v1.globald.spec[0].type == "ClusterIP")
    error_message = "the global Service carries http and grpc"
  }
  assert {
    condition = (kubernetes_service_v1.gossip.spec[0].cluster_ip == "None" && kubernetes_service_v1.gossip.spec[0].publish_not_ready_addresses == true
    && [for p in kubernetes_service_v1.gossip.spec[0].port : "${p.port}/${p.protocol}"] == ["7946/TCP", "7946/UDP"])
    error_message = "the gossip Service is headless over TCP and UDP and lists unready pods"
  }
  assert {
    condition     = length(kubernetes_service_v1.gossip_lb) == 0 && length(kubernetes_secret_v1.gossip) == 0 && output.external_gossip_seed == null
    error_message = "no gossip load balancer or key unless asked"
  }
  assert {
    condition     = kubernetes_pod_disruption_budget_v1.globald.spec[0].max_unavailable == "1"
    error_message = "a PodDisruptionBudget"
  }
  assert {
    condition = (output.http_endpoint == "http://globald.default.svc.cluster.local:8090"
      && output.grpc_endpoint == "globald.default.svc.cluster.local:8091"
    && output.gossip_seed == "globald-gossip.default.svc.cluster.local:7946")
    error_message = "endpoints and the in-cluster seed"
  }
}

run "flags_key_and_external_seed" {
  command = plan

  variables {
    name              = "global"
    namespace         = "router"
    replicas          = 3
    seeds             = ["10.9.0.4:7947"]
    routing           = { max_probes = 3, probe_timeout = "80ms", rtt_weight = 0.5 }
    gossip_secret_key = "MDEyMzQ1Njc4OWFiY2RlZg=="
    gossip_load_balancer = {
      ip          = "10.8.0.10"
      annotations = { "networking.gke.io/load-balancer-type" = "Internal" }
    }
    service  = { type = "LoadBalancer" }
    api_keys = { secret_name = "fleet-keys" }
  }

  assert {
    condition = kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args == tolist([
      "--http-addr=:8090", "--grpc-addr=:8091", "--gossip-bind=:7946", "--gossip-advertise=$(POD_IP):7946",
      "--gossip-name=global/$(POD_NAME)", "--log-level=info",
      "--seed=global-gossip.router.svc.cluster.local:7946", "--seed=10.9.0.4:7947",
      "--gossip-secret-key=$(GOSSIP_SECRET_KEY)",
      "--max-probes=3", "--probe-timeout=80ms", "--rtt-weight=0.5",
      "--api-keys=/etc/globald/keys/api-keys.yaml",
    ])
    error_message = "extra seeds, the key from the environment, and only the routing flags that are set"
  }
  assert {
    condition     = kubernetes_deployment_v1.globald.spec[0].replicas == "3" && kubernetes_secret_v1.gossip[0].metadata[0].name == "global-gossip-key"
    error_message = "replicas and the key's Secret"
  }
  assert {
    condition = (kubernetes_service_v1.gossip_lb[0].spec[0].type == "LoadBalancer" && kubernetes_service_v1.gossip_lb[0].spec[0].load_balancer_ip == "10.8.0.10"
    && [for p in kubernetes_service_v1.gossip_lb[0].spec[0].port : "${p.port}/${p.protocol}"] == ["7946/TCP", "7946/UDP"])
    error_message = "the gossip load balancer at the reserved IP, TCP and UDP"
  }
  assert {
    condition     = output.external_gossip_seed == "10.8.0.10:7946" && kubernetes_service_v1.globald.spec[0].type == "LoadBalancer"
    error_message = "a reserved IP gives the external seed at plan time"
  }
}

run "bad_seed" {
  command = plan
  variables {
    seeds = ["http://10.9.0.4:7947"]
  }
  expect_failures = [var.seeds]
}

run "zero_replicas" {
  command = plan
  variables {
    replicas = 0
  }
  expect_failures = [var.replicas]
}

run "bad_full_at" {
  command = plan
  variables {
    routing = { full_at = 1.5 }
  }
  expect_failures = [var.routing]
}

run "bad_probe_timeout" {
  command = plan
  variables {
    routing = { probe_timeout = "fast" }
  }
  expect_failures = [var.routing]
}

run "colliding_ports" {
  command = plan
  variables {
    ports = { grpc = 7946 }
  }
  expect_failures = [var.ports]
}

run "bad_load_balancer_ip" {
  command = plan
  variables {
    gossip_load_balancer = { ip = "10.8.0.300" }
  }
  expect_failures = [var.gossip_load_balancer]
}

run "endpoint_picker" {
  command = plan

  variables {
    epp     = { port = 9100 }
    routing = { move_weight = 2, probe_cold = false, pressure_weight = 0.5, full_at = 0.8, avoid_busy = true }
  }
  assert {
    condition = (contains(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, "--epp-addr=:9100")
      && contains(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, "--move-weight=2")
      && contains(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, "--probe-cold=false")
      && contains(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, "--pressure-weight=0.5")
      && contains(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, "--avoid-busy=true")
    && contains(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, "--full-at=0.8"))
    error_message = "the picker's listener and the cold, move, pressure, full-at and avoid-busy flags"
  }
  assert {
    condition = ([for p in kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].port : "${p.name}/${p.container_port}/${p.protocol}"]
    == ["http/8090/TCP", "grpc/8091/TCP", "gossip-tcp/7946/TCP", "gossip-udp/7946/UDP", "epp/9100/TCP"])
    error_message = "the picker's container port"
  }
  assert {
    condition = (kubernetes_service_v1.epp[0].metadata[0].name == "globald-epp"
      && kubernetes_service_v1.epp[0].spec[0].port[0].port == 9100
    && kubernetes_service_v1.epp[0].spec[0].port[0].app_protocol == "http2")
    error_message = "the picker's Service"
  }
}

run "no_endpoint_picker" {
  command = plan

  assert {
    condition     = length(kubernetes_service_v1.epp) == 0
    error_message = "no picker Service without epp"
  }
}
