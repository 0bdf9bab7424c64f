#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The conformance run's other side (tools/kvm-conformance.sh): the same
# selftests on Linux's own KVM, this kernel booted without Slat.
KVM_CONF_SIDE=kvm
. /tests/kvm_conf.sh
