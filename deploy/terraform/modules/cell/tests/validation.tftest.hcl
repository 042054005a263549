# Values that would fail late (celld refusing its configuration at start,
# or a cell that silently misbehaves) fail at plan instead.

mock_provider "kubernetes" {}

variables {
  name  = "cell-a"
  image = "registry.example.com/cellrouter:v1.2.0"
}

run "replicas_with_gossip_and_nats" {
  command = plan
  variables {
    replicas = 2
    gossip   = { seeds = ["10.8.0.10:7946"] }
    nats     = { url = "nats://nats:4222" }
  }
}

run "replicas_with_shared_durable" {
  command = plan
  variables {
    replicas = 2
    nats     = { url = "nats://nats:4222", durable = "celld-a" }
  }
  expect_failures = [var.replicas]
}

run "replicas_with_zmq_bind" {
  command = plan
  variables {
    replicas = 2
    zmq      = { bind_port = 5557 }
  }
  expect_failures = [var.replicas]
}

run "bad_name" {
  command = plan
  variables {
    name = "Cell_A"
  }
  expect_failures = [var.name]
}

run "long_cell_id" {
  command = plan
  variables {
    cell_id = "a-cell-id-that-is-far-too-long-for-the-gossip-wire-format-which-holds-64"
  }
  expect_failures = [var.cell_id]
}

run "pod_address_with_scheme" {
  command = plan
  variables {
    pods = [{ id = "pod-0", address = "http://10.0.0.7:8000" }]
  }
  expect_failures = [var.pods]
}

run "duplicate_pod_ids" {
  command = plan
  variables {
    pods = [{ id = "pod-0", address = "10.0.0.7:8000" }, { id = "pod-0", address = "10.0.0.8:8000" }]
  }
  expect_failures = [var.pods]
}

run "zmq_endpoint_without_scheme" {
  command = plan
  variables {
    pods = [{ id = "pod-0", address = "10.0.0.7:8000", zmq_endpoint = "10.0.0.7:5557" }]
  }
  expect_failures = [var.pods]
}

run "replay_without_a_socket" {
  command = plan
  variables {
    pods = [{ id = "pod-0", address = "10.0.0.7:8000", replay_endpoint = "tcp://10.0.0.7:5558" }]
  }
  expect_failures = [var.pods]
}

run "too_many_pods" {
  command = plan
  variables {
    pods         = [for i in range(200) : { id = "pod-${i}", address = "10.0.${floor(i / 200)}.${i % 200}:8000" }]
    demo_engines = { count = 100 }
  }
  expect_failures = [var.pods]
}

run "bad_duration" {
  command = plan
  variables {
    events = { dead_after = "30 seconds" }
  }
  expect_failures = [var.events]
}

run "bad_block_size" {
  command = plan
  variables {
    events = { block_size = 24 }
  }
  expect_failures = [var.events]
}

run "prefill_without_decode" {
  command = plan
  variables {
    routing = { prefill_profile = "pre" }
  }
  expect_failures = [var.routing]
}

run "profiles_not_a_list" {
  command = plan
  variables {
    routing = { profiles_yaml = "name: p" }
  }
  expect_failures = [var.routing]
}

run "bad_secret_key" {
  command = plan
  variables {
    gossip            = { seeds = ["10.8.0.10:7946"] }
    gossip_secret_key = "not-a-key"
  }
  expect_failures = [var.gossip_secret_key]
}

run "advertise_with_port" {
  command = plan
  variables {
    gossip = { seeds = ["10.8.0.10:7946"], advertise_address = "10.20.0.5:7947" }
  }
  expect_failures = [var.gossip]
}

run "seed_with_scheme" {
  command = plan
  variables {
    gossip = { seeds = ["tcp://10.8.0.10:7946"] }
  }
  expect_failures = [var.gossip]
}

run "bad_nats_url" {
  command = plan
  variables {
    nats = { url = "10.0.0.3:4222" }
  }
  expect_failures = [var.nats]
}

run "same_ports" {
  command = plan
  variables {
    ports = { http = 9090 }
  }
  expect_failures = [var.ports]
}

run "bootstrap_without_replicas" {
  command = plan
  variables {
    snapshot = { bootstrap_from_replicas = true }
  }
  expect_failures = [var.snapshot]
}

run "bad_snapshot_settings" {
  command = plan
  variables {
    snapshot = { interval = "often", keep = 0, size_limit = "lots" }
  }
  expect_failures = [var.snapshot]
}
