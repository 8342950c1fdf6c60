package config

import "time"

// The defaults of SPEC §2, in one place. A key left out of the file takes
// the value here; a key present with an explicit zero is an error unless the
// key gives 0 a meaning.
const (
	DefaultNodeName         = "gw"
	DefaultTransport        = "tcp"
	DefaultWSPath           = "/ws"
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultEnvelope         = "idlen"
	DefaultBody             = "json"
	DefaultMaxFrameBytes    = 65536

	DefaultLogFormat = "json"
	DefaultLogLevel  = "info"

	DefaultMaxStringBytes = 16 << 20
	DefaultHeapLimitBytes = 2 << 30

	DefaultHTTPTimeout          = 5 * time.Second
	DefaultHTTPMaxResponseBytes = 1 << 20

	DefaultIdleTimeout    = 60 * time.Second
	DefaultWriteTimeout   = 5 * time.Second
	DefaultMaxInflight    = 32
	DefaultOutboundQueue  = 256
	DefaultDuplicateLogin = "kick_old"
	DefaultMaxSessions    = 100000
	DefaultRatePerSecond  = 200
	DefaultRateBurst      = 400
	DefaultShutdownGrace  = 10 * time.Second

	DefaultOutboundQueueBytes = 1 << 20
	DefaultAuthMaxFrameBytes  = 8192             // 0 would mean the listener's max_frame_bytes
	DefaultAuthTimeout        = 30 * time.Second // 0 would turn it off
	DefaultResumeWindow       = 0 * time.Second  // 0: no resume

	DefaultClusterPrefix = "shield"
	DefaultHeartbeat     = 1 * time.Second
	DefaultNodeTimeout   = 3 * time.Second

	DefaultDataDir       = "data"
	DefaultReplicas      = 1 // storage.replicas
	MaxReplicas          = 5 // JetStream's most
	DefaultMaxValueBytes = 65536
	DefaultBucketTTL     = 0 * time.Second // 0: keep forever

	DefaultInstances      = 1
	DefaultMailbox        = 1024
	DefaultHandlerTimeout = 15 * time.Second
	DefaultMaxPending     = 10000
)

// Default returns a configuration holding every default and no listener or
// actor. Decoding starts from it, so a key the file leaves out keeps its value.
func Default() Config {
	return Config{
		Node:    Node{Name: DefaultNodeName},
		Log:     Log{Format: DefaultLogFormat, Level: DefaultLogLevel},
		Tracing: Tracing{SampleRatio: DefaultSampleRatio},
		Lua: Lua{
			MaxStringBytes: DefaultMaxStringBytes,
			HeapLimitBytes: DefaultHeapLimitBytes,
			HTTP:           HTTP{Timeout: DefaultHTTPTimeout, MaxResponseBytes: DefaultHTTPMaxResponseBytes},
		},
		Session: Session{
			IdleTimeout:    DefaultIdleTimeout,
			WriteTimeout:   DefaultWriteTimeout,
			MaxInflight:    DefaultMaxInflight,
			OutboundQueue:  DefaultOutboundQueue,
			DuplicateLogin: DefaultDuplicateLogin,
			MaxSessions:    DefaultMaxSessions,
			RateLimit:      RateLimit{PerSecond: DefaultRatePerSecond, Burst: DefaultRateBurst},
			ShutdownGrace:  DefaultShutdownGrace,

			OutboundQueueBytes: DefaultOutboundQueueBytes,
			AuthMaxFrameBytes:  DefaultAuthMaxFrameBytes,
			AuthTimeout:        DefaultAuthTimeout,
			ResumeWindow:       DefaultResumeWindow,
		},
		// Cluster and Storage stay nil: each is off unless its key is
		// given, and then starts from defaultCluster or defaultStorage.
	}
}

// defaultAdmin is network.admin when the mapping is given: pprof and play
// off, no token (so /admin/* is off).
func defaultAdmin() Admin { return Admin{} }

func defaultCluster() Cluster {
	return Cluster{Prefix: DefaultClusterPrefix, Heartbeat: DefaultHeartbeat, NodeTimeout: DefaultNodeTimeout}
}

func defaultStorage() Storage { return Storage{DataDir: DefaultDataDir, Replicas: DefaultReplicas} }

func defaultBucket() Bucket {
	return Bucket{MaxValueBytes: DefaultMaxValueBytes, TTL: DefaultBucketTTL}
}

func defaultListener() Listener {
	return Listener{
		Transport:        DefaultTransport,
		HandshakeTimeout: DefaultHandshakeTimeout,
		Protocol:         Protocol{Envelope: DefaultEnvelope, Body: DefaultBody, MaxFrameBytes: DefaultMaxFrameBytes},
	}
}

func defaultActor() Actor {
	return Actor{
		Instances:      DefaultInstances,
		Mailbox:        DefaultMailbox,
		HandlerTimeout: DefaultHandlerTimeout,
		MaxPending:     DefaultMaxPending,
	}
}

func defaultRoute() Route {
	return Route{Direction: C2S, RequiresAuth: true, Action: DecodeLocal, LazyDecode: true}
}
