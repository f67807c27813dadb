terraform {
  required_providers {
    kha = {
      source = "kha/kha"
    }
  }
}

# The provider has no required settings.
provider "kha" {}
