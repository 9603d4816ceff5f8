module tempest

go 1.26.8

require (
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/sbinet/npyio v0.6.0 // indirect
	golang.org/x/image v0.47.0 // indirect
	gonum.org/v1/gonum v0.9.3 // indirect
)
