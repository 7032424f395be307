import sys
user = sys.argv[1]
is_admin = False
if user != "none‮ ⁦# check admin⁩ ⁦":
    is_admin = True
print(is_admin)
