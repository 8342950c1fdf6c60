module github.com/shieldrpc/shield

go 1.26

require (
	github.com/yuin/gopher-lua v1.1.2
	gopkg.in/yaml.v3 v3.0.1
)
