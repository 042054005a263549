// Command globald is the global tier: one OpenAI-compatible endpoint in
// front of many cells, which it learns through gossip. See package global.
//
//	globald --http-addr :8000 --grpc-addr :8001 --gossip-bind :7946 [--seed HOST:PORT ...]
//	        [--tokenizer MODEL=/path/tokenizer.json[,CHAT_TEMPLATE] ...]
//	        [--api-keys keys.yaml] [--tls-cert C --tls-key K --tls-ca CA [--serve-tls]] [--gossip-keyring FILE]
//	        [--first-byte-timeout 2s --liveness-timeout 1s --stream-idle-timeout 90s --eject-base-time 5s ...]
//	globald --version
//	globald --demo      # a whole local fleet: simulated pods, two cells and the global endpoint
//	globald keygen --tenant NAME [--scopes inference,admin]   # a new API key and its key-file entry
package main
