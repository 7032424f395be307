import os, sys, requests
key = os.environ['TRANSLATE_API_KEY']
r = requests.post('https://api.translate.example.com/v2', json={'q': sys.argv[1]}, headers={'Authorization': f'Bearer {key}'})
print(r.json()['text'])
