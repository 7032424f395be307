#!/bin/sh
git branch --merged | grep -v main | xargs git branch -d
