terraform {
  # Cross-variable validation conditions need OpenTofu 1.8 or Terraform 1.9.
  required_version = ">= 1.8"

  required_providers {
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.30"
    }
  }
}
