// Command celld is the cell daemon: it indexes the KV caches of up to 256
// engine pods from their KV events and serves the cell's state, health and
// metrics. See package cell for what it runs, and
// cell/testdata/celld.example.yaml for a documented configuration.
//
//	celld --config celld.yaml [--http-addr HOST:PORT] [--grpc-addr HOST:PORT] [--epp-addr HOST:PORT] [--cell-id ID] [--replica-id ID] [--log-level info]
//	      [--gossip-advertise IP:PORT] [--gossip-secret-key KEY]
//	      [--kv-overlap-score-weight 1] [--kv-pressure-weight 1] [--router-temperature 0] [--busy-threshold 0.95]
//	      [--prefix-wait=true --prefix-wait-max 5s]
//	      [--api-keys keys.yaml] [--tls-cert C --tls-key K --tls-ca CA] [--max-body-bytes N ...]
//	      [--snapshot-dir DIR --snapshot-interval 5m --snapshot-every-events N --snapshot-keep 3]
//	      [--bootstrap-from REPLICA_GRPC_ADDR]
//	      [--first-byte-timeout 2s --liveness-timeout 1s --stream-idle-timeout 1m --eject-base-time 5s]
//	celld --check-config celld.yaml   # check the configuration (with any flags above) and exit
//	celld --version
package main
