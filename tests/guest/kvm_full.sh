#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# slat.test=kvm_full: tests/guest/kvm.sh with every run, including those
# `make test` leaves out for time (`make test-slow`: tests/slow/t_*_kvm*.sh).
KVM_FULL=1 . /tests/kvm.sh
