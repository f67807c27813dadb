package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// testAccProviders serves the provider in-process to the real terraform
// binary that terraform-plugin-testing drives.
var testAccProviders = map[string]func() (tfprotov6.ProviderServer, error){
	"kha": providerserver.NewProtocol6WithError(New("test", "test")()),
}
